"""GELU, exact (erf) and tanh-approximate: ONNX has a Gelu op only from opset 20 (with both modes);
below it the exporters write Erf or Tanh arithmetic."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import torch

from harness import register_case


class Gelu(torch.nn.Module):
    def __init__(self, op: Any, approximate: str) -> None:
        super().__init__()
        self.op = op
        self.approximate = approximate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.op(x, approximate=self.approximate)


def gelu_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor]:
    return (torch.randn(shape["N"], 8, 32, generator=gen) * 3,)


@register_case(
    "gelu",
    family="gelu",
    inputs=gelu_inputs,
    params=({"approximate": "none"}, {"approximate": "tanh"}),
    shapes=({"N": 2},),
    input_names=("input",),
    exporters=("torchscript",),  # dynamo writes the same graphs here, at four times the cost
    opsets=(13, 17, 20),
    tags=("op",),
)
def gelu(params: Dict[str, Any], op: Any) -> torch.nn.Module:
    """F.gelu on a (N, 8, 32) input, exact and tanh-approximate."""
    return Gelu(op, params["approximate"])
