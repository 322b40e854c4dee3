"""The state one cell's stages hand each other, and the measuring code reads."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, ContextManager, Dict, List, NamedTuple, Optional, Sequence, Tuple

from harness.campaign.options import Options
from harness.judge.session import OrtSession
from harness.plan.registry import Case
from harness.plan.spec import CellSpec
from harness.record import CellRecord
from harness.strategies import Strategy, get_strategy, reference_strategy


class Judged(NamedTuple):
    """One input set the graph is judged on (on the cell's device and dtype) and the reference's outputs."""

    label: str
    stage: str  # parity, dynamic
    inputs: Tuple[Any, ...]
    expected: Any


@dataclass
class CellState:
    """What the stages of one cell hand each other."""

    cell: CellSpec
    case: Case
    strategy: Strategy
    reference: Strategy
    opts: Options
    blank: CellRecord  # who the cell is, before any stage: what its artifact's manifest records
    atol: float = 0.0
    rtol: float = 0.0
    found: Dict[str, Any] = field(default_factory=dict)  # record fields the stages fill in
    comparisons: List[Dict[str, Any]] = field(default_factory=list)
    model: Any = None
    ref_model: Any = None
    inputs32: Tuple[Any, ...] = ()  # float32 on the CPU, as the case made them: what the reference runs on
    inputs: Tuple[Any, ...] = ()  # on the cell's device and dtype
    expected: Any = None
    blob: bytes = b""
    input_names: List[str] = field(default_factory=list)
    judged: List[Judged] = field(default_factory=list)
    session: Optional[OrtSession] = None

    def routing(self) -> ContextManager[None]:
        """The strategy's routing, and that of each other operator the case uses (its params name the strategy)."""
        others = [get_strategy(family, self.cell.params[family]) for family in self.case.operators]
        return _entered([self.strategy, *others])

    def reference_routing(self) -> ContextManager[None]:
        """The ground truth: every operator through its family's reference."""
        return _entered([self.reference, *(reference_strategy(family) for family in self.case.operators)])


def _entered(strategies: Sequence[Strategy]) -> ContextManager[None]:
    stack = contextlib.ExitStack()
    for strategy in strategies:
        stack.enter_context(strategy.context())
    return stack
