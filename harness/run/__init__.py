"""The parent of a run: the chain of steps, the worker pool, the results writer and the progress line."""
