"""The parent of `harness run` and `harness list`: its own steps (the selection, the environment, the cells) and the
export kind the shared campaign steps (harness.campaign) run."""
