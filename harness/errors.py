"""The one error type for user mistakes: caught at the CLI and printed as one line naming the fix."""

from __future__ import annotations


class UserError(Exception):
    """Bad input from the user (a flag, a case file, a results file); the message says how to fix it."""


class HarnessError(Exception):
    """A bug of ours, told apart from a failing strategy in the records."""
