"""Which cells can run here: the impossible ones are dropped with a one-line reason before any work."""

from __future__ import annotations

from typing import Optional

from harness.fingerprint import EnvInfo
from harness.registry import Case
from harness.spec import CellSpec
from harness.strategies import Strategy


def not_applicable_reason(
    cell: CellSpec,
    case: Case,
    strategy: Strategy,
    env: EnvInfo,
    dynamo_reason: Optional[str],
    cuda_reason: Optional[str] = None,
) -> Optional[str]:
    if cell.opset > env.max_opset:
        return f"torch {env.torch} exports opsets up to {env.max_opset}, not {cell.opset}"
    if cell.exporter == "dynamo" and dynamo_reason:
        return dynamo_reason
    if cell.device == "cuda" and (cuda_reason or not env.gpu):
        return cuda_reason or "no CUDA device is visible to this environment's torch"
    if cell.dtype in ("float16", "bfloat16") and cell.device == "cpu":
        return f"{cell.dtype} cells run on CUDA (CPU kernels for half types are partial in older torch)"
    reason = strategy.unavailable(env)
    if reason:
        return reason
    return strategy.unsupported(cell.params, cell, env)
