"""gelu strategies: native F.gelu (one ONNX Gelu node only from opset 20), `formula` (the erf or tanh
expression written out), and `custom_op`, a custom symbolic emitting `custom::Gelu` that no stock runtime runs."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Dict, Optional

from harness.record import EnvInfo, parse_version
from harness.strategies import CUSTOM_DOMAIN, STANDARD, Strategy, register_strategy
from harness.strategies._symbolic import scoped_symbolic

if TYPE_CHECKING:  # cells are what a strategy is asked about, never what it imports
    from harness.plan.spec import CellSpec

FAMILY = "gelu"
CUSTOM_NAME = "custom::Gelu"


def _approximate(params: Dict[str, Any]) -> str:
    return params.get("approximate", "none")


def _tanh_missing(params: Dict[str, Any], env: Any) -> Optional[str]:
    """F.gelu(approximate='tanh') is the reference; without it the whole row is not applicable."""
    if _approximate(params) != "tanh":
        return None

    version = env.torch
    if parse_version(version) < (1, 12):
        return f"F.gelu(approximate='tanh') came with torch 1.12; torch {version} has no such reference"
    return None


def native_gelu(input: Any, approximate: str = "none") -> Any:
    import torch.nn.functional as F

    if approximate == "none":
        return F.gelu(input)  # torch < 1.12 has no `approximate` argument
    return F.gelu(input, approximate=approximate)


def formula_gelu(input: Any, approximate: str = "none") -> Any:
    """GELU from its definition: x * Phi(x) with erf, or Hendrycks and Gimpel's tanh approximation."""
    import torch

    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + torch.tanh(inner))
    return 0.5 * input * (1.0 + torch.erf(input * (1.0 / math.sqrt(2.0))))


@register_strategy
class Native(Strategy):
    family = FAMILY
    name = "native"
    portability = STANDARD
    summary = "torch.nn.functional.gelu as is: ONNX Gelu (one node) from opset 20, Erf or Tanh arithmetic below it"
    reference = True

    def op(self) -> Callable[..., Any]:
        return native_gelu

    def unsupported(self, cell: CellSpec, env: EnvInfo) -> Optional[str]:
        params = cell.params
        return _tanh_missing(params, env)


@register_strategy
class Formula(Strategy):
    family = FAMILY
    name = "formula"
    portability = STANDARD
    summary = "0.5*x*(1+erf(x/sqrt(2))) or the tanh approximation written out: Erf/Tanh and arithmetic at every opset"

    def op(self) -> Callable[..., Any]:
        return formula_gelu

    def unsupported(self, cell: CellSpec, env: EnvInfo) -> Optional[str]:
        params = cell.params
        return _tanh_missing(params, env)


@register_strategy
class CustomOp(Strategy):
    family = FAMILY
    name = "custom_op"
    portability = CUSTOM_DOMAIN
    summary = (
        "a custom symbolic mapping aten::gelu to custom::Gelu (one node, as a TensorRT plugin or an own kernel "
        "library expects); stock onnxruntime has no kernel for it, so the model does not load there"
    )

    def op(self) -> Callable[..., Any]:
        return native_gelu

    def unsupported(self, cell: CellSpec, env: EnvInfo) -> Optional[str]:
        params = cell.params
        if cell.exporter != "torchscript":
            return "custom symbolics apply to the TorchScript exporter only"
        return _tanh_missing(params, env)

    def context(self) -> ContextManager[None]:
        return scoped_symbolic("gelu", _custom_gelu)


def _custom_gelu(g, self, approximate=None):
    """Symbolic for aten::gelu; torch < 1.12 passes no `approximate`.

    No annotations: torch 1.12 resolves a symbolic's type hints and calls issubclass() on the first one,
    which fails on typing.Any.
    """
    mode = "none"
    if approximate is not None:
        from torch.onnx import symbolic_helper

        mode = symbolic_helper._maybe_get_const(approximate, "s")
    return g.op(CUSTOM_NAME, self, approximate_s=mode)
