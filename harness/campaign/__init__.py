"""What every command that works through a list of jobs shares (export cells, replays, conversions): the flags,
the results files' names, the resume key and the shard test, the worker pool, the results writer, the progress
line and the chain of steps. Torch-free and Python 3.8-clean: it runs in every kind of environment."""
