"""nn.LayerNorm over the last axis and over the last two, with affine weights: ONNX has a LayerNormalization
op only from opset 17; below it every exporter writes the reduction out."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import torch

from harness import register_case

NORMALIZED = {"last": (16,), "last2": (7, 16)}


class Norm(torch.nn.Module):
    def __init__(self, op: Any, normalized_shape: Tuple[int, ...]) -> None:
        super().__init__()
        self.op = op
        self.normalized_shape = normalized_shape
        gen = torch.Generator().manual_seed(0)
        self.weight = torch.nn.Parameter(torch.randn(normalized_shape, generator=gen) * 0.5 + 1)
        self.bias = torch.nn.Parameter(torch.randn(normalized_shape, generator=gen) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.op(x, self.normalized_shape, self.weight, self.bias, 1e-5)


def norm_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor]:
    # an offset and a spread, so a missing mean or a wrong variance shows
    return (torch.randn(shape["N"], 7, 16, generator=gen) * 3 + 2,)


@register_case(
    "layernorm",
    family="layernorm",
    inputs=norm_inputs,
    params=({"normalized": "last"}, {"normalized": "last2"}),
    exporters=("torchscript",),
    shapes=({"N": 2},),
    input_names=("input",),
    opsets=(13, 17),
    tags=("op",),
)
def layernorm(params: Dict[str, Any], op: Any) -> torch.nn.Module:
    """nn.LayerNorm-style module (affine) over the last axis, or the last two, of a (N, 7, 16) input."""
    return Norm(op, NORMALIZED[params["normalized"]])


@register_case(
    "layernorm_dynamo",
    family="layernorm",
    inputs=norm_inputs,
    params=({"normalized": "last"},),
    shapes=({"N": 2},),
    input_names=("input",),
    exporters=("dynamo",),
    opsets=(13, 17),
    tags=("op", "exporter"),
)
def layernorm_dynamo(params: Dict[str, Any], op: Any) -> torch.nn.Module:
    """The last-axis LayerNorm through the dynamo exporter, which writes opset 18 and converts down."""
    return Norm(op, NORMALIZED[params["normalized"]])
