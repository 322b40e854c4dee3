"""What a worker (or the parent, with --jobs 0) does with one cell: look it up and run its pipeline."""

from __future__ import annotations

import traceback
from typing import Optional, Sequence

from harness.artifacts.store import ArtifactStore
from harness.plan.registry import Case, get_case, load_cases
from harness.plan.spec import CellSpec
from harness.record import CellRecord, Fingerprint, Verdict
from harness.strategies import get_strategy, reference_strategy
from harness.worker.fingerprint import collect
from harness.worker.options import Options
from harness.worker.pipeline import run_cell


def blank_record(
    cell: CellSpec, case: Case, fingerprint: Fingerprint, verdict: Verdict, reason: Optional[str] = None
) -> CellRecord:
    """A cell's record before any stage: who it is, where it runs, against which reference. The worker fills it
    in; the parent uses it for the cells no worker answers (not applicable, crashed, timed out)."""
    return cell.record(
        fingerprint,
        verdict,
        reference=reference_strategy(cell.family).name,
        portability=get_strategy(cell.family, cell.strategy).portability.value,
        tags=case.tags,
        operators=case.operators,
        reason=reason,
    )


class CellExecutor:
    def __init__(self, env_name: str, cases_dirs: Sequence[str], options: Options) -> None:
        load_cases(cases_dirs)
        self.env = collect(env_name)
        self.options = options

    def answer(self, cell: CellSpec) -> CellRecord:
        """The cell's record, always: a bug of ours anywhere (outside the stages too) is a harness error."""
        try:
            return self.execute(cell)
        except Exception:
            text = traceback.format_exc()
            try:
                record = self.blank(cell, Verdict.HARNESS_ERROR)
            except Exception:  # the cell's case or strategy cannot even be looked up
                record = cell.record(self.env.fingerprint, Verdict.HARNESS_ERROR, reference="", portability="", tags=())
            return record.with_(reason=text.strip().splitlines()[-1][:300], traceback=text[-4000:])

    def execute(self, cell: CellSpec) -> CellRecord:
        case = get_case(cell.case)
        strategy = get_strategy(cell.family, cell.strategy)
        reference = reference_strategy(cell.family)
        if self.options.artifacts_dir:  # a cell run again keeps nothing of its earlier graph
            ArtifactStore(self.options.artifacts_dir).discard(self.env.name, cell.cell_id)
        return run_cell(self.blank(cell, Verdict.PASS), cell, case, strategy, reference, self.options)

    def blank(self, cell: CellSpec, verdict: Verdict) -> CellRecord:
        return blank_record(cell, get_case(cell.case), self.env.fingerprint, verdict)
