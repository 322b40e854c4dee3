"""What can run here. An environment's own limits (an exporter its torch lacks, opsets above what it writes) are
said once per environment and never become cells; what a strategy, a case or a device cannot do becomes a
`not_applicable` cell with its one-line reason, decided before any work.

A GPU this torch cannot drive stays a cell-level reason: a bench-gpu environment whose cells would all vanish
would leave the page nothing to show that environment by."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from harness.plan.spec import CellSpec
from harness.record import EnvInfo
from harness.strategies import Strategy


@dataclass(frozen=True)
class EnvLimits:
    """Axes this environment cannot do at all, each with the reason."""

    torch: str
    max_opset: int
    exporters: Dict[str, str] = field(default_factory=dict)  # exporter -> why it is missing here

    def why_not(self, cell: CellSpec) -> Optional[str]:
        """The limit a cell falls under, as its key in `describe()`, or None when the environment can do it."""
        if cell.opset > self.max_opset:
            return self.opset_key
        if cell.exporter in self.exporters:
            return f"exporter {cell.exporter}"
        return None

    @property
    def opset_key(self) -> str:
        return f"opsets above {self.max_opset}"

    def describe(self) -> Dict[str, str]:
        """{limit: reason}, as records carry it and the page shows it."""
        said = {self.opset_key: f"torch {self.torch} exports opsets up to {self.max_opset}"}
        said.update((f"exporter {k}", v) for k, v in sorted(self.exporters.items()))
        return said


def environment_limits(env: EnvInfo, dynamo_reason: Optional[str]) -> EnvLimits:
    return EnvLimits(env.torch, env.max_opset, {"dynamo": dynamo_reason} if dynamo_reason else {})


def split_by_limits(cells: Sequence[CellSpec], limits: EnvLimits) -> Tuple[List[CellSpec], Dict[str, int]]:
    """The cells this environment can do, and how many fell under each of its limits."""
    within: List[CellSpec] = []
    beyond: Dict[str, int] = collections.Counter()
    for cell in cells:
        limit = limits.why_not(cell)
        if limit is None:
            within.append(cell)
        else:
            beyond[limit] += 1
    return within, dict(beyond)


def not_applicable_reason(
    cell: CellSpec, strategy: Strategy, env: EnvInfo, cuda_reason: Optional[str] = None
) -> Optional[str]:
    """Why this strategy, case or device cannot do this cell here, or None: the cell runs."""
    if cell.device == "cuda" and (cuda_reason or not env.gpu):
        return cuda_reason or "no CUDA device is visible to this environment's torch"
    if cell.dtype in ("float16", "bfloat16") and cell.device == "cpu":
        return f"{cell.dtype} cells run on CUDA (CPU kernels for half types are partial in older torch)"
    return strategy.unavailable(env) or strategy.unsupported(cell, env)
