"""Planning a run: the case registry, cells and their expansion, and what this environment can do."""
