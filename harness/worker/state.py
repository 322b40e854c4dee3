"""The state one cell's stages hand each other, and the measuring code reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from harness.plan.registry import Case
from harness.plan.spec import CellSpec
from harness.strategies import Strategy
from harness.worker.fingerprint import EnvInfo
from harness.worker.options import Options
from harness.worker.session import OrtSession


@dataclass
class CellState:
    """What the stages of one cell hand each other."""

    cell: CellSpec
    case: Case
    strategy: Strategy
    reference: Strategy
    env: EnvInfo
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
