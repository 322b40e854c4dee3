"""The state one cell's stages hand each other, and the measuring code reads."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, ContextManager, Dict, List, Optional, Sequence, Tuple

from harness.plan.registry import Case
from harness.plan.spec import CellSpec
from harness.strategies import Strategy, get_strategy, reference_strategy
from harness.worker.options import Options
from harness.worker.session import OrtSession


@dataclass
class CellState:
    """What the stages of one cell hand each other."""

    cell: CellSpec
    case: Case
    strategy: Strategy
    reference: Strategy
    opts: Options
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
