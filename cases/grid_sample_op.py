"""The bare grid_sample operator over a sweep of mode, padding and align_corners, on grids that cover the
interior, the exact borders, half-pixel ties and points far beyond [-1, 1]."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import torch

from harness import register_case

GRID_RANGE = 1.3
MODES_4D = ("bilinear", "nearest", "bicubic")
MODES_5D = ("bilinear", "nearest")
PADDINGS = ("zeros", "border", "reflection")


def _params() -> Tuple[Dict[str, Any], ...]:
    sweep = []
    for mode in MODES_4D:
        for padding in PADDINGS:
            for align in (False, True):
                sweep.append(
                    {"mode": mode, "padding_mode": padding, "align_corners": align, "rank": 4, "grid_range": GRID_RANGE}
                )
    for mode in MODES_5D:
        for padding in PADDINGS:
            sweep.append(
                {"mode": mode, "padding_mode": padding, "align_corners": False, "rank": 5, "grid_range": GRID_RANGE}
            )
    return tuple(sweep)


def special_points(size: int, align_corners: bool, grid_range: float) -> torch.Tensor:
    """Normalised coordinates that break careless rewrites: borders, beyond them, and half-pixel ties."""
    ties = []
    for k in [-4, *range(-1, size), size + 2]:  # ties inside, on the borders, and beyond them (reflected)
        pixel = k + 0.5
        ties.append(2 * pixel / (size - 1) - 1 if align_corners else (2 * pixel + 1) / size - 1)
    edges = [-1.0, 1.0, -grid_range, grid_range, 0.0, -1.0 - 0.5 / size, 1.0 + 0.5 / size, -3.0, 3.0]
    return torch.tensor(edges + ties, dtype=torch.float32)


def op_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor, ...]:
    rank = params.get("rank", 4)
    r = params.get("grid_range", GRID_RANGE)
    n, c = shape["N"], shape["C"]
    spatial_in = [shape["D"], shape["H"], shape["W"]] if rank == 5 else [shape["H"], shape["W"]]
    spatial_out = [shape["Do"], shape["Ho"], shape["Wo"]] if rank == 5 else [shape["Ho"], shape["Wo"]]
    x = torch.randn([n, c] + spatial_in, generator=gen)
    grid = (torch.rand([n] + spatial_out + [rank - 2], generator=gen) * 2 - 1) * r
    flat = grid.view(-1, rank - 2)
    # grid's last axis is (x, y[, z]); sizes in that order are W, H[, D]
    for axis, size in enumerate(reversed(spatial_in)):
        pts = special_points(size, bool(params.get("align_corners")), r)
        count = min(len(pts), flat.shape[0] // (rank - 2))
        flat[axis * count : (axis + 1) * count, axis] = pts[:count]
    return x, grid


class GridSampleOp(torch.nn.Module):
    def __init__(self, op: Any, params: Dict[str, Any]) -> None:
        super().__init__()
        self.op = op
        self.mode = params.get("mode", "bilinear")
        self.padding_mode = params.get("padding_mode", "zeros")
        self.align_corners = bool(params.get("align_corners", False))

    def forward(self, x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
        return self.op(x, grid, mode=self.mode, padding_mode=self.padding_mode, align_corners=self.align_corners)


# H = 16 and W - 1 = 16: the half-pixel ties are exact binary fractions on one axis for each align_corners
SHAPES_4D = ({"N": 2, "C": 3, "H": 16, "W": 17, "Ho": 11, "Wo": 9, "D": 5, "Do": 4},)


@register_case(
    "grid_sample_op",
    family="grid_sample",
    inputs=op_inputs,
    params=_params(),
    shapes=SHAPES_4D,
    input_names=("input", "grid"),
    exporters=("torchscript",),
    tags=("op", "sweep"),
)
def grid_sample_op(params: Dict[str, Any], op: Any) -> torch.nn.Module:
    """The bare operator: every mode x padding x align_corners, 4-D and 5-D, grids beyond [-1, 1]."""
    return GridSampleOp(op, params)


DYNAMIC_SHAPES = (
    {"N": 2, "C": 3, "H": 13, "W": 17, "Ho": 11, "Wo": 9, "D": 5, "Do": 4},
    {"N": 1, "C": 3, "H": 20, "W": 9, "Ho": 7, "Wo": 15, "D": 3, "Do": 6},
    {"N": 4, "C": 3, "H": 8, "W": 8, "Ho": 16, "Wo": 5, "D": 7, "Do": 2},
)


@register_case(
    "grid_sample_dynamic",
    family="grid_sample",
    inputs=op_inputs,
    params=(
        {"mode": "bilinear", "padding_mode": "zeros", "align_corners": False, "rank": 4, "grid_range": GRID_RANGE},
        {"mode": "bicubic", "padding_mode": "reflection", "align_corners": True, "rank": 4, "grid_range": GRID_RANGE},
    ),
    shapes=DYNAMIC_SHAPES,
    input_names=("input", "grid"),
    dynamic_axes={
        "input": {0: "batch", 2: "height", 3: "width"},
        "grid": {0: "batch", 1: "out_height", 2: "out_width"},
        "output": {0: "batch", 2: "out_height", 3: "out_width"},
    },
    shape_modes=("dynamic",),
    opsets=(11, 16, 18),
    tags=("op", "dynamic"),
)
def grid_sample_dynamic(params: Dict[str, Any], op: Any) -> torch.nn.Module:
    """The operator exported with dynamic batch and spatial axes, run at three shapes; both exporters."""
    return GridSampleOp(op, params)
