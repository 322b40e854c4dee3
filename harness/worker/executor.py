"""What a worker (or the parent, with --jobs 0) does with one cell: look it up and run its pipeline."""

from __future__ import annotations

import traceback
from typing import Sequence

from harness.plan.registry import get_case, load_cases
from harness.plan.spec import CellSpec
from harness.record import CellRecord, Verdict
from harness.strategies import get_strategy, reference_strategy
from harness.worker.fingerprint import collect
from harness.worker.options import Options
from harness.worker.pipeline import run_cell


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
        return run_cell(self.blank(cell, Verdict.PASS), cell, case, strategy, reference, self.options)

    def blank(self, cell: CellSpec, verdict: Verdict) -> CellRecord:
        """The cell's record before any stage: who it is, where it runs, against which reference."""
        return cell.record(
            self.env.fingerprint,
            verdict,
            reference=reference_strategy(cell.family).name,
            portability=get_strategy(cell.family, cell.strategy).portability.value,
            tags=get_case(cell.case).tags,
            operators=get_case(cell.case).operators,
        )
