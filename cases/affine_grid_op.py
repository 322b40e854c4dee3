"""`F.affine_grid` alone, 4-D and 5-D, both align_corners: torch exports it (aten::affine_grid_generator) only
from opset 20; the custom rewrite at every opset. The sizes come from an input tensor, as `x.size()` does in a
model, so a dynamic export keeps them dynamic."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import torch
from torch import nn

from harness import register_case

SHAPES = ({"N": 2, "D": 3, "H": 5, "W": 7}, {"N": 1, "D": 2, "H": 9, "W": 4}, {"N": 3, "D": 1, "H": 1, "W": 6})


class AffineGrid(nn.Module):
    def __init__(self, op: Any, align_corners: bool) -> None:
        super().__init__()
        self.op, self.align_corners = op, align_corners

    def forward(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return self.op(theta, x.size(), align_corners=self.align_corners)


def theta_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor, ...]:
    n, dims = shape["N"], params["rank"] - 2
    theta = torch.eye(dims, dims + 1).expand(n, dims, dims + 1) + 0.3 * torch.randn(n, dims, dims + 1, generator=gen)
    spatial = (shape["D"], shape["H"], shape["W"])[-dims:]
    return theta, torch.zeros(n, 3, *spatial)


def _register(name: str, rank: int, dynamic: Dict[int, str], **axes: Any) -> None:
    def factory(params: Dict[str, Any], op: Any) -> nn.Module:
        return AffineGrid(op, params["align_corners"])

    factory.__doc__ = f"F.affine_grid(theta, x.size()) for {rank}-D sizes, both align_corners; dynamic batch and sizes."
    register_case(
        name,
        family="affine_grid",
        inputs=theta_inputs,
        params=tuple({"rank": rank, "align_corners": ac} for ac in (False, True)),
        shapes=SHAPES,
        input_names=("theta", "x"),
        dynamic_axes={"theta": {0: "n"}, "x": {0: "n", **dynamic}, "output": {0: "n"}},
        tags=("op",),
        **axes,
    )(factory)


_register("affine_grid_op", 4, {2: "h", 3: "w"}, exporters=("torchscript",), opsets=(11, 13, 16, 17, 20))
_register("affine_grid_op_3d", 5, {2: "d", 3: "h", 4: "w"}, exporters=("torchscript",), opsets=(11, 13, 16, 17, 20))
# dynamo writes opset 18 (below it, it converts down or drifts): its own opset and the newest, dynamic sizes
_register("affine_grid_op_dynamo", 4, {2: "h", 3: "w"}, exporters=("dynamo",), shape_modes=("dynamic",), opsets=(18,))
