"""The one error type for user mistakes, and the exit codes of every command, defined once."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    HARNESS_ERROR = 1  # a cell hit a bug of ours; every other cell was still measured
    USAGE = 2  # bad input: a flag, a case file, a results file; the message says how to fix it
    INTERRUPTED = 130  # Ctrl-C: every finished cell is saved and the same command resumes


class UserError(Exception):
    """Bad input from the user (a flag, a case file, a results file); the message says how to fix it."""
