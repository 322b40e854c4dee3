"""A cell's record before any stage: who it is, where it runs, against which reference. The worker fills it in;
the parent of a run writes it for the cells no worker answers (not applicable, crashed, timed out)."""

from __future__ import annotations

from typing import Optional

from harness.plan.registry import Case
from harness.plan.spec import CellSpec
from harness.record import CellRecord, Fingerprint, Verdict
from harness.strategies import get_strategy, reference_strategy


def blank_record(
    cell: CellSpec, case: Case, fingerprint: Fingerprint, verdict: Verdict, reason: Optional[str] = None
) -> CellRecord:
    return cell.record(
        fingerprint,
        verdict,
        reference=reference_strategy(cell.family).name,
        portability=get_strategy(cell.family, cell.strategy).portability.value,
        tags=case.tags,
        operators=case.operators,
        reason=reason,
    )
