"""Judging a graph, with or without torch: the stages, parity against the reference, timing and memory, sessions."""
