"""Steps chained like nox's tasks: each learns something into one state object or ends the command with its code."""

from __future__ import annotations

from typing import Callable, Optional, Sequence, TypeVar

from harness.errors import ExitCode

State = TypeVar("State")


def run_chain(state: State, steps: Sequence[Callable[[State], Optional[int]]]) -> int:
    """Each step in order; the first to return an exit code ends the chain with it, else the command succeeded."""
    for step in steps:
        code = step(state)
        if code is not None:
            return code
    return ExitCode.OK
