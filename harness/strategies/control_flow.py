"""control_flow strategies for a data-dependent branch: tracing freezes the branch taken at export time,
scripting keeps an ONNX If, and restructuring with torch.where removes the branch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from harness.record import EnvInfo
from harness.strategies import STANDARD, Strategy, register_strategy

if TYPE_CHECKING:
    from torch.nn import Module

    from harness.plan.spec import CellSpec

FAMILY = "control_flow"


def branchy(x):
    """The model's own Python code: which side runs depends on the values of x.

    No annotations and no type comments on purpose: TorchScript takes an unannotated argument as a
    Tensor, cannot compile the string annotation `Any`, and torch 1.8 reads any type comment, even one
    in a docstring, as a signature.
    """
    if bool(x.sum() > 0):
        return x * 2
    return -x


def branchless(x: Any) -> Any:
    """The same function with both sides computed and one selected by a tensor condition."""
    import torch

    return torch.where(x.sum() > 0, x * 2, -x)


@register_strategy
class Eager(Strategy):
    family = FAMILY
    name = "eager"
    portability = STANDARD
    summary = (
        "the model's Python branch run eagerly: the ground truth. Exporting it as is traces it, which is "
        "the `traced` strategy"
    )
    reference = True

    def op(self) -> Callable[..., Any]:
        return branchy

    def unsupported(self, cell: CellSpec, env: EnvInfo) -> Optional[str]:
        return "the eager reference itself; its plain export is the `traced` strategy"


@register_strategy
class Traced(Strategy):
    family = FAMILY
    name = "traced"
    portability = STANDARD
    summary = (
        "plain torch.onnx.export of the Python branch: TorchScript tracing records only the branch the "
        "export input took (a TracerWarning, then wrong answers on the other side); dynamo refuses or guards"
    )

    def op(self) -> Callable[..., Any]:
        return branchy


@register_strategy
class Scripted(Strategy):
    family = FAMILY
    name = "scripted"
    portability = STANDARD
    summary = "torch.jit.script(model) before export: the branch becomes an ONNX If with both sides"

    def op(self) -> Callable[..., Any]:
        return branchy

    def wrap(self, model: Module, cell: CellSpec) -> Module:
        import torch

        return torch.jit.script(model)


@register_strategy
class Arithmetic(Strategy):
    family = FAMILY
    name = "arithmetic"
    portability = STANDARD
    summary = "the branch rewritten as torch.where(cond, a, b): no control flow, both sides computed, any exporter"

    def op(self) -> Callable[..., Any]:
        return branchless
