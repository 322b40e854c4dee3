"""F.interpolate (nn.Upsample) in nearest, bilinear and bicubic mode, by scale factor and by size.

ONNX Resize changed meaning at opset 11 (coordinate_transformation_mode, nearest_mode, cubic): opset 10 can
only say "asymmetric", so half-pixel and align_corners resizes cannot export faithfully there.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

import torch

from harness import register_case


def _params() -> Tuple[Dict[str, Any], ...]:
    """Each mode once by scale factor and once by size, align_corners both ways for the interpolating modes."""
    scale: Dict[str, Any] = {"scale_factor": 2.0}
    size: Dict[str, Any] = {"size": [17, 23]}  # 12x10 -> 17x23: scales 12/17 and 10/23, and a nearest-exact tie
    return (
        dict(scale, mode="nearest"),
        dict(size, mode="nearest"),
        dict(size, mode="nearest-exact"),
        dict(scale, mode="bilinear", align_corners=False),
        dict(size, mode="bilinear", align_corners=False),
        dict(size, mode="bilinear", align_corners=True),
        dict(size, mode="bicubic", align_corners=False),
        dict(scale, mode="bicubic", align_corners=True),
    )


class Resize(torch.nn.Module):
    def __init__(self, op: Any, params: Dict[str, Any]) -> None:
        super().__init__()
        self.op = op
        self.mode = params["mode"]
        self.size = tuple(params["size"]) if "size" in params else None
        self.scale_factor = params.get("scale_factor")
        self.align_corners = params.get("align_corners")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.op(
            x, size=self.size, scale_factor=self.scale_factor, mode=self.mode, align_corners=self.align_corners
        )


def resize_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor]:
    return (torch.randn(shape["N"], shape["C"], shape["H"], shape["W"], generator=gen),)


@register_case(
    "resize_op",
    family="resize",
    inputs=resize_inputs,
    params=_params(),
    shapes=({"N": 2, "C": 3, "H": 12, "W": 10},),
    input_names=("input",),
    exporters=("torchscript",),
    opsets=(10, 11, 13, 17),
    tags=("op", "sweep"),
)
def resize_op(params: Dict[str, Any], op: Any) -> torch.nn.Module:
    """F.interpolate on a 12x10 input: nearest[-exact], bilinear, bicubic, align_corners, scale 2 or size 17x23."""
    return Resize(op, params)


@register_case(
    "resize_dynamo",
    family="resize",
    inputs=resize_inputs,
    params=({"mode": "nearest-exact", "size": [17, 23]},),
    shapes=({"N": 2, "C": 3, "H": 12, "W": 10},),
    input_names=("input",),
    exporters=("dynamo",),
    opsets=(18,),
    tags=("op", "exporter"),
)
def resize_dynamo(params: Dict[str, Any], op: Any) -> torch.nn.Module:
    """nearest-exact, which the TorchScript exporter cannot export, through dynamo at opset 18 and the newest."""
    return Resize(op, params)
