"""A small convolutional net of the kind people quantize: convolutions, GELU, a Resize (upsampling) and a LayerNorm
over the last axis. Its fp32 graph is the baseline the fp16 and int8 conversions of the runtime ladder are judged
against; the layernorm strategy under test is the one the net's LayerNorm runs through."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import torch
import torch.nn.functional as F

from harness import register_case

SIZE = 16  # the input's height and width; the Resize doubles them


def _conv(gen: torch.Generator, cin: int, cout: int) -> torch.nn.Conv2d:
    conv = torch.nn.Conv2d(cin, cout, kernel_size=3, padding=1)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=gen) * (2.0 / (cin * 9)) ** 0.5)
        conv.bias.copy_(torch.randn(conv.bias.shape, generator=gen) * 0.1)
    return conv


class ConvNet(torch.nn.Module):
    def __init__(self, op: Any, resize: str) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.op, self.resize = op, resize
        self.stem, self.mid, self.head = _conv(gen, 3, 16), _conv(gen, 16, 16), _conv(gen, 16, 3)
        self.weight = torch.nn.Parameter(torch.randn(2 * SIZE, generator=gen) * 0.2 + 1)
        self.bias = torch.nn.Parameter(torch.randn(2 * SIZE, generator=gen) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.gelu(self.stem(x))
        y = F.interpolate(
            y, scale_factor=2.0, mode=self.resize, **({"align_corners": False} if self.resize == "bilinear" else {})
        )
        y = self.op(self.mid(y), (2 * SIZE,), self.weight, self.bias, 1e-5)
        return self.head(F.gelu(y))


def image_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor]:
    return (torch.rand(shape["N"], 3, SIZE, SIZE, generator=gen),)


@register_case(
    "convnet",
    family="layernorm",
    inputs=image_inputs,
    params=({"resize": "bilinear"}, {"resize": "nearest"}),
    shapes=({"N": 2},),
    input_names=("image",),
    exporters=("torchscript",),
    opsets=(13, 17),
    tags=("model", "quantize"),
)
def convnet(params: Dict[str, Any], op: Any) -> torch.nn.Module:
    """Conv, GELU, 2x Resize (bilinear or nearest), conv, LayerNorm over the last axis, GELU, conv: 16x16 -> 32x32."""
    return ConvNet(op, params["resize"])
