"""Models other people wrote, unmodified, with random weights and small inputs: torchvision's RAFT small and kornia's
`remap`, `warp_perspective` and `warp_affine`. Each case names what it needs (`requires`); every environment
resolves that against its own pins (the newest release that fits its torch and Python) and runs the case in a venv
of its own, or says in one line why nothing fits. The packages are imported inside the factories: the run plans
the cells before it knows whether they are installed."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import torch
from torch import nn

from harness import register_case

# RAFT (torchvision >= 0.12) ---------------------------------------------------------------------------------------

RAFT_UPDATES = 2  # flow updates per call: each repeats the correlation lookup (4 grid_samples) and the GRU


class RaftSmall(nn.Module):
    """torchvision's `raft_small(weights=None)`, called as its documentation does; the last flow prediction."""

    def __init__(self) -> None:
        super().__init__()
        from torchvision.models.optical_flow import raft_small

        torch.manual_seed(0)
        self.raft = raft_small(weights=None)

    def forward(self, image1: torch.Tensor, image2: torch.Tensor) -> torch.Tensor:
        return self.raft(image1, image2, num_flow_updates=RAFT_UPDATES)[-1]


def raft_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor, ...]:
    n, h, w = shape["N"], shape["H"], shape["W"]  # RAFT wants sizes divisible by 8 and images in [-1, 1]
    first = torch.rand(n, 3, h, w, generator=gen) * 2 - 1
    second = torch.roll(first, shifts=(2, 3), dims=(2, 3)) + 0.05 * torch.randn(n, 3, h, w, generator=gen)
    return first, second


@register_case(
    "raft_small",
    family="grid_sample",
    inputs=raft_inputs,
    params=({"mode": "bilinear", "padding_mode": "zeros", "align_corners": True},),
    shapes=({"N": 1, "H": 128, "W": 128},),  # its coarsest correlation level is then 2x2 (1x1 would divide by 0)
    input_names=("image1", "image2"),
    exporters=("torchscript",),
    opsets=(9, 11, 16),  # Resize's align_corners needs 11; GridSample 16; the newest is added
    strategies=("native", "custom", "mmcv", "contrib"),
    tolerance=(1e-3, 1e-3),  # two GRU updates over a random network: float32 sums in another order
    tags=("model", "optical_flow", "unmodified", "third_party"),
    requires=["torchvision>=0.12"],
)
def raft_small(params: Dict[str, Any], op: Any) -> nn.Module:
    """torchvision's RAFT small (random weights, 128x128, 2 flow updates), unmodified: it calls F.grid_sample itself."""
    return RaftSmall()


# kornia ----------------------------------------------------------------------------------------------------------

KORNIA_SHAPES = ({"N": 2, "H": 16, "W": 20},)
KORNIA_PARAMS = ({"mode": "bilinear", "padding_mode": "zeros", "align_corners": True},)
KORNIA = dict(
    family="grid_sample",
    shapes=KORNIA_SHAPES,
    exporters=("torchscript",),
    opsets=(11, 16),
    strategies=("native", "custom"),
)


class KorniaRemap(nn.Module):
    def forward(self, image: torch.Tensor, map_x: torch.Tensor, map_y: torch.Tensor) -> torch.Tensor:
        from kornia.geometry.transform import remap

        return remap(image, map_x, map_y, mode="bilinear", padding_mode="zeros", align_corners=True)


def remap_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor, ...]:
    n, h, w = shape["N"], shape["H"], shape["W"]
    ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32))
    map_x = xs.expand(n, h, w) + 2 * torch.randn(n, h, w, generator=gen)  # some beyond the borders
    map_y = ys.expand(n, h, w) + 2 * torch.randn(n, h, w, generator=gen)
    return torch.randn(n, 3, h, w, generator=gen), map_x, map_y


@register_case(
    "kornia_remap",
    inputs=remap_inputs,
    params=KORNIA_PARAMS,
    input_names=("image", "map_x", "map_y"),
    tags=("model", "unmodified", "third_party", "kornia"),
    requires=["kornia"],
    **KORNIA,
)
def kornia_remap(params: Dict[str, Any], op: Any) -> nn.Module:
    """kornia.geometry.transform.remap with pixel maps, unmodified (the release that fits the environment)."""
    return KorniaRemap()


class KorniaWarp(nn.Module):
    """kornia's warp_perspective (3x3 matrices) or warp_affine (2x3) to the input's own size."""

    def __init__(self, warp: str) -> None:
        super().__init__()
        self.warp = warp

    def forward(self, image: torch.Tensor, matrix: torch.Tensor) -> torch.Tensor:
        from kornia.geometry.transform import warp_affine, warp_perspective

        size = (image.shape[2], image.shape[3])
        warp = warp_perspective if self.warp == "perspective" else warp_affine
        return warp(image, matrix, dsize=size, mode="bilinear", padding_mode="zeros", align_corners=True)


def warp_inputs(rows: int) -> Any:
    def inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor, ...]:
        n, h, w = shape["N"], shape["H"], shape["W"]
        matrix = torch.eye(3).repeat(n, 1, 1) + 0.05 * torch.randn(n, 3, 3, generator=gen)
        matrix[:, :2, 2] += 3 * torch.randn(n, 2, generator=gen)  # a shift of a few pixels
        matrix[:, 2, 2] = 1.0
        if rows == 2:
            matrix = matrix[:, :2, :].contiguous()
        return torch.randn(n, 3, h, w, generator=gen), matrix

    return inputs


@register_case(
    "kornia_warp_perspective",
    inputs=warp_inputs(3),
    params=KORNIA_PARAMS,
    input_names=("image", "matrix"),
    tags=("model", "unmodified", "third_party", "kornia"),
    requires=["kornia"],
    **KORNIA,
)
def kornia_warp_perspective(params: Dict[str, Any], op: Any) -> nn.Module:
    """kornia.geometry.transform.warp_perspective, unmodified: torch.inverse before kornia 0.9, a closed form after."""
    return KorniaWarp("perspective")


@register_case(
    "kornia_warp_affine",
    inputs=warp_inputs(2),
    params=tuple(dict(p, affine_grid=a) for p in KORNIA_PARAMS for a in ("native", "custom")),
    input_names=("image", "matrix"),
    operators=("affine_grid",),
    tags=("model", "unmodified", "third_party", "kornia"),
    requires=["kornia"],
    **KORNIA,
)
def kornia_warp_affine(params: Dict[str, Any], op: Any) -> nn.Module:
    """kornia.geometry.transform.warp_affine, unmodified: it inverts the matrix and calls F.affine_grid itself."""
    return KorniaWarp("affine")
