"""Steps chained like nox's tasks, and what the chains of `harness run` and `harness replay` share: each outcome
stamped and written as it ends, the work stopped cleanly by Ctrl-C, the exit code from what was written."""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional, Protocol, Sequence, TypeVar

from harness import __version__
from harness.errors import ExitCode
from harness.record import Verdict
from harness.run.pool import Outcome, now_iso
from harness.run.progress import Progress
from harness.run.writer import ResultsWriter

State = TypeVar("State")


def run_chain(state: State, steps: Sequence[Callable[[State], Optional[int]]]) -> int:
    """Each step in order; the first to return an exit code ends the chain with it, else the command succeeded."""
    for step in steps:
        code = step(state)
        if code is not None:
            return code
    return ExitCode.OK


class Recording(Protocol):
    """The part of a run's (or a replay's) state that writes its records."""

    code: str
    run_id: str
    writer: Optional[ResultsWriter]
    progress: Optional[Progress]
    harness_errors: int
    interrupted: bool


def write_outcome(state: Recording, outcome: Outcome, ran: bool = True, **fields: Any) -> None:
    """One outcome as its record: stamped with the run, the code and the times, written at once, counted."""
    record = outcome.record.with_(
        run_id=state.run_id,
        code_hash=state.code,
        harness_version=__version__,
        started_at=outcome.started_at,
        finished_at=now_iso(),
        wall_s=round(outcome.wall_s, 4),
        **fields,
    )
    state.writer.write(record)
    state.progress.finished(record.verdict.value, outcome.wall_s, ran)
    state.harness_errors += record.verdict == Verdict.HARNESS_ERROR


def until_done_or_interrupted(state: Recording, work: Callable[[], None]) -> None:
    """The work, until it ends or Ctrl-C stops it; the results file and the progress line are closed either way."""
    try:
        work()
    except KeyboardInterrupt:
        state.interrupted = True
    finally:
        state.writer.close()
        state.progress.close()


def exit_code(state: Recording, saved: str) -> int:
    """INTERRUPTED (saying how to resume), HARNESS_ERROR if any record is our bug, else OK."""
    if state.interrupted:
        print(f"interrupted: every {saved} is saved; run the same command again to resume", file=sys.stderr)
        return ExitCode.INTERRUPTED
    return ExitCode.HARNESS_ERROR if state.harness_errors else ExitCode.OK
