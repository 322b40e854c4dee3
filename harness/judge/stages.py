"""Walking a list of stages: the first that fails names the verdict, a fatal failure skips the rest.

Shared by the exporting cell (harness.worker.pipeline) and the replay (harness.replay.judge); torch-free.
"""

from __future__ import annotations

import re
import time
import traceback
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from harness.record import Stage, Verdict


class StageFailed(Exception):
    """A stage's own finding (a mismatch, a drift): the verdict it names, and the message."""

    def __init__(self, verdict: Verdict, message: str) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.message = message


class StageSpec(NamedTuple):
    name: str
    run: Callable[[Any], None]
    verdict: Verdict  # when third-party code raises in it
    fatal: bool = True  # such a raise skips every later stage (a StageFailed finding never does)
    when: Callable[[Any], bool] = lambda s: True
    why_not: Callable[[Any], Optional[str]] = lambda s: None  # what a stage `when` skips says, if anything


class Walked(NamedTuple):
    verdict: Optional[Verdict]
    reason: Optional[str]
    stages: Tuple[Stage, ...]
    stopped_at: Optional[str]


def walk(specs: Sequence[StageSpec], state: Any, found: Dict[str, Any]) -> Walked:
    """Run each stage in order on `state`; a harness-error stage keeps its first traceback in `found`."""
    verdict: Optional[Verdict] = None
    reason: Optional[str] = None
    stages: List[Stage] = []
    stopped_at: Optional[str] = None
    for spec in specs:
        if stopped_at:
            stages.append(Stage(spec.name, "skipped"))
            continue
        if not spec.when(state):
            stages.append(Stage(spec.name, "skipped", message=spec.why_not(state)))
            continue
        stage, failure, fatal = _run_stage(spec, state, found)
        stages.append(stage)
        if failure is not None and verdict is None:
            verdict, reason = failure
        stopped_at = spec.name if fatal else None
    return Walked(verdict, reason, tuple(stages), stopped_at)


def _run_stage(spec: StageSpec, state: Any, found: Dict[str, Any]) -> Tuple[Stage, Optional[Tuple[Verdict, str]], bool]:
    """One stage: its record, the (verdict, reason) it names if it failed, and whether the walk stops here."""
    start = time.perf_counter()
    try:
        spec.run(state)
    except StageFailed as finding:  # the stage's own finding: later stages still run
        seconds = round(time.perf_counter() - start, 6)
        stage = Stage(spec.name, "failed", None, finding.message, seconds)
        return stage, (finding.verdict, f"{spec.name}: {finding.message}"), False
    except Exception as exc:  # third-party code raised: the stage's verdict, with its message
        seconds = round(time.perf_counter() - start, 6)
        if spec.verdict == Verdict.HARNESS_ERROR:  # our bug (or the case's): its traceback, the first one
            found.setdefault("traceback", traceback.format_exc()[-4000:])
        stage = Stage(spec.name, "failed", type(exc).__name__, message_of(exc), seconds)
        return stage, (spec.verdict, f"{spec.name}: {type(exc).__name__}: {first_line(exc)}"), spec.fatal
    return Stage(spec.name, "ok", seconds=round(time.perf_counter() - start, 6)), None, False


def message_of(exc: BaseException) -> str:
    text = str(exc).strip() or repr(exc)
    return text if len(text) <= 4000 else text[:4000] + " ..."


# Where-it-was-thrown lines that some runtimes put before what went wrong (OpenVINO's "Exception from src/...:84:").
_LOCATION = re.compile(r"^\s*(Exception from|Check '.*' failed at) \S+:\d+:?\s*$")


def first_line(exc: BaseException) -> str:
    """The first line that says what went wrong, for the verdict's one-line reason (the stage keeps it all)."""
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    telling = [ln for ln in lines if not _LOCATION.match(ln)]
    return ((telling or lines)[0] if lines else repr(exc))[:300]
