"""What a worker (or the parent, with --jobs 0) does with one cell: look it up and run its pipeline."""

from __future__ import annotations

from typing import Any, Dict, Sequence

from harness.fingerprint import collect
from harness.pipeline import Options, run_cell
from harness.registry import get_case, load_cases
from harness.spec import CellSpec
from harness.strategies import get_strategy, reference_strategy


class CellExecutor:
    def __init__(self, env_name: str, cases_dirs: Sequence[str], options: Options) -> None:
        load_cases(cases_dirs)
        self.env = collect(env_name)
        self.options = options

    def execute(self, cell_data: Dict[str, Any]) -> Dict[str, Any]:
        cell = CellSpec.from_dict(cell_data)
        case = get_case(cell.case)
        strategy = get_strategy(cell.family, cell.strategy)
        reference = reference_strategy(cell.family)
        return run_cell(cell, case, strategy, reference, self.env, self.options)
