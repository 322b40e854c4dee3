"""What an export worker does with one cell: look it up and run its pipeline; a bug of ours is its record too."""

from __future__ import annotations

import traceback
from typing import Sequence

from harness.artifacts.store import ArtifactStore
from harness.campaign.options import Options
from harness.plan.blank import blank_record
from harness.plan.registry import get_case, load_cases
from harness.plan.spec import CellSpec
from harness.record import CellRecord, Verdict, installed_packages
from harness.strategies import get_strategy, reference_strategy
from harness.worker.fingerprint import collect
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
        if self.options.artifacts_dir:  # a cell run again keeps nothing of its earlier graph
            ArtifactStore(self.options.artifacts_dir).discard(self.env.name, cell.cell_id)
        return run_cell(self.blank(cell, Verdict.PASS), cell, case, strategy, reference, self.options)

    def blank(self, cell: CellSpec, verdict: Verdict) -> CellRecord:
        case = get_case(cell.case)
        fingerprint = self.env.fingerprint
        if case.requires:  # what this venv has of the case's own requirements
            fingerprint = fingerprint.with_packages(installed_packages(case.requires))
        return blank_record(cell, case, fingerprint, verdict)
