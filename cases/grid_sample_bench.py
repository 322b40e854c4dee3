"""grid_sample at the sizes people quote: the reference N16 C3 256x256 and a feature map N4 C64 64x64.

These cells carry the latency and memory figures the advisor weighs; bench-gpu runs them on CUDA in fp32
and fp16.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

import torch

from harness import register_case

SIZES = {
    "n16c3_256": {"N": 16, "C": 3, "H": 256, "W": 256, "Ho": 256, "Wo": 256},
    "n4c64_64": {"N": 4, "C": 64, "H": 64, "W": 64, "Ho": 64, "Wo": 64},
}


def bench_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor, ...]:
    s = SIZES[params["size"]]
    x = torch.randn(s["N"], s["C"], s["H"], s["W"], generator=gen)
    grid = (torch.rand(s["N"], s["Ho"], s["Wo"], 2, generator=gen) * 2 - 1) * 1.1
    return x, grid


class Sample(torch.nn.Module):
    def __init__(self, op: Any, params: Dict[str, Any]) -> None:
        super().__init__()
        self.op, self.mode, self.padding = op, params["mode"], params["padding_mode"]

    def forward(self, x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
        return self.op(x, grid, mode=self.mode, padding_mode=self.padding, align_corners=False)


@register_case(
    "grid_sample_bench",
    family="grid_sample",
    inputs=bench_inputs,
    params=tuple(
        {"mode": "bilinear", "padding_mode": "zeros", "align_corners": False, "rank": 4, "size": size} for size in SIZES
    ),
    input_names=("input", "grid"),
    exporters=("torchscript",),
    opsets=(11, 16),
    tags=("bench", "gpu"),
)
def grid_sample_bench(params: Dict[str, Any], op: Any) -> torch.nn.Module:
    """bilinear/zeros at the reference size (N16 C3 256x256) and a feature-map size (N4 C64 64x64)."""
    return Sample(op, params)
