"""A data-dependent branch, `x * 2 if x.sum() > 0 else -x`, after a small linear layer: the export input
takes one side, the input variant the other, so a frozen (traced) branch shows as a mismatch."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import torch

from harness import register_case


class Branch(torch.nn.Module):
    def __init__(self, op: Any) -> None:
        super().__init__()
        self.op = op
        self.proj = torch.nn.Linear(8, 8)
        with torch.no_grad():  # the identity plus a little: the sign of the sum follows the input's
            self.proj.weight.copy_(torch.eye(8) + 0.01 * torch.ones(8, 8))
            self.proj.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.op(self.proj(x))


def branch_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor]:
    """Positive sum at the export input, negative on variant 1."""
    x = torch.rand(shape["N"], 8, generator=gen) + 0.1
    return (-x if shape.get("variant") == 1 else x,)


@register_case(
    "data_dependent_branch",
    family="control_flow",
    inputs=branch_inputs,
    shapes=({"N": 2},),
    variants=1,
    input_names=("input",),
    opsets=(11,),
    tags=("model", "control_flow"),
)
def data_dependent_branch(params: Dict[str, Any], op: Any) -> torch.nn.Module:
    """Linear, then `x * 2 if x.sum() > 0 else -x`; a second input takes the other side."""
    return Branch(op)
