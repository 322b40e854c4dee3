"""Every exported graph kept with its samples, so runtimes without torch can judge it again (harness.replay)."""
