"""The spatial transformer of PyTorch's tutorial, unmodified: `F.affine_grid(theta, x.size())` then
`F.grid_sample(x, grid)`. torch has no ONNX symbolic for affine_grid before opset 20, so whatever the
grid_sample strategy, this model exports only where affine_grid is rewritten too: each cell names the
affine_grid strategy it runs with (`affine_grid` param), the grid_sample one is the cell's strategy."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from harness import register_case


class TutorialSTN(nn.Module):
    """The tutorial's localisation net and transformer (MNIST-sized), as written there."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
        )
        self.fc_loc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(True), nn.Linear(32, 3 * 2))
        with torch.no_grad():  # the tutorial starts at the identity; a little of the trained tilt, so borders show
            self.fc_loc[2].weight.mul_(0.2)
            self.fc_loc[2].bias.copy_(torch.tensor([1, 0.15, 0, -0.1, 1, 0], dtype=torch.float))

    def stn(self, x: torch.Tensor) -> torch.Tensor:
        xs = self.localization(x)
        xs = xs.view(-1, 10 * 3 * 3)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.stn(x)


def mnist_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor]:
    return (torch.rand(shape["N"], 1, 28, 28, generator=gen),)


COMMON = dict(
    family="grid_sample",
    inputs=mnist_inputs,
    params=({"affine_grid": "native"}, {"affine_grid": "custom"}),
    shapes=({"N": 2}, {"N": 1}, {"N": 3}),
    input_names=("input",),
    dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
    operators=("affine_grid",),
)


@register_case(
    "stn_tutorial",
    exporters=("torchscript",),
    opsets=(11, 13, 16, 20),  # below GridSample, its first opset, and affine_grid_generator's first; the newest added
    tags=("model", "stn", "unmodified"),
    **COMMON,
)
def stn_tutorial(params: Dict[str, Any], op: Any) -> nn.Module:
    """PyTorch's STN tutorial model as written: F.affine_grid then F.grid_sample, run through the strategies."""
    return TutorialSTN()


@register_case(
    "stn_tutorial_dynamo",
    exporters=("dynamo",),
    shape_modes=("dynamic",),
    opsets=(18,),  # the dynamo exporter's own opset (below it, it converts down or drifts); the newest added
    tags=("model", "stn", "unmodified", "exporter"),
    **COMMON,
)
def stn_tutorial_dynamo(params: Dict[str, Any], op: Any) -> nn.Module:
    """The tutorial STN through the dynamo exporter with a dynamic batch."""
    return TutorialSTN()
