"""A small spatial transformer network: localisation net -> affine grid -> grid_sample -> classifier."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import torch
from torch import nn

from harness import register_case


def affine_grid(theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """F.affine_grid(theta, x.size(), align_corners=False) from arange and matmul.

    torch's own affine_grid_generator has no ONNX symbolic before opset 20, so exportable STNs build the
    base grid themselves; this keeps the spatial sizes dynamic.
    """
    n, h, w = x.shape[0], x.shape[2], x.shape[3]
    xs = (torch.arange(w, dtype=x.dtype, device=x.device) * 2 + 1) / w - 1
    ys = (torch.arange(h, dtype=x.dtype, device=x.device) * 2 + 1) / h - 1
    gx = xs.view(1, -1).expand(h, w)
    gy = ys.view(-1, 1).expand(h, w)
    base = torch.stack([gx, gy, torch.ones_like(gx)], dim=-1).view(1, -1, 3).expand(n, h * w, 3)
    grid = torch.bmm(base, theta.transpose(1, 2))
    return grid.view(n, h, w, 2)


class STN(nn.Module):
    def __init__(self, op: Any, mode: str, padding_mode: str) -> None:
        super().__init__()
        self.op, self.mode, self.padding_mode = op, mode, padding_mode
        self.features = nn.Sequential(nn.Conv2d(1, 8, 5), nn.MaxPool2d(2), nn.ReLU(), nn.Conv2d(8, 10, 3), nn.ReLU())
        # a global mean, not AdaptiveAvgPool2d(k): torch cannot export that with dynamic height and width
        self.fc = nn.Linear(10, 6)
        with torch.no_grad():  # start near identity, tilted, so borders are sampled
            self.fc.weight.mul_(0.05)
            self.fc.bias.copy_(torch.tensor([0.9, 0.35, 0.1, -0.3, 0.95, -0.05]))
        self.head = nn.Conv2d(1, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        theta = self.fc(self.features(x).mean(dim=(2, 3))).view(-1, 2, 3)
        grid = affine_grid(theta, x)
        warped = self.op(x, grid, mode=self.mode, padding_mode=self.padding_mode, align_corners=False)
        return self.head(warped)


def stn_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor]:
    return (torch.randn(shape["N"], 1, shape["H"], shape["W"], generator=gen),)


@register_case(
    "stn",
    family="grid_sample",
    inputs=stn_inputs,
    params=({"mode": "bilinear", "padding_mode": "zeros"}, {"mode": "bilinear", "padding_mode": "border"}),
    shapes=({"N": 2, "H": 28, "W": 28}, {"N": 3, "H": 32, "W": 24}, {"N": 1, "H": 20, "W": 36}),
    input_names=("image",),
    dynamic_axes={"image": {0: "batch", 2: "height", 3: "width"}, "output": {0: "batch", 2: "height", 3: "width"}},
    exporters=("torchscript",),  # dynamo x dynamic shapes costs minutes here; flow_warp_dynamo covers it
    tags=("model",),
)
def stn(params: Dict[str, Any], op: Any) -> nn.Module:
    """A spatial transformer (localisation net, affine grid, grid_sample, conv head) as in the STN paper."""
    torch.manual_seed(0)
    return STN(op, params["mode"], params["padding_mode"])
