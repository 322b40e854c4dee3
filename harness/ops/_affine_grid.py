"""`affine_grid` from plain tensor ops: torch's own (aten::affine_grid_generator) has no ONNX symbolic before
opset 20, so an unmodified spatial transformer exports neither on torch 1.x nor below opset 20 on 2.x.

The grid is torch's to float rounding: each base coordinate is an exact integer divided once (torch's
linspace rounds a few times more), then the same batched matmul with theta. No linspace (torch 1.8.1 cannot
export it), no in-place writes (lost in tracing); every size comes from `size`, so traced sizes keep the
graph dynamic.
"""

from __future__ import annotations

import warnings
from typing import List, Optional, Sequence, Tuple, Union

import torch
from torch import Tensor

from harness.ops._grid_plan import exporting, resolve_align_corners, tracing

Size = Union[int, Tensor]  # a Python int in eager mode, a 0-d int64 tensor while tracing, a SymInt in dynamo


def affine_grid(theta: Tensor, size: Sequence[Size], align_corners: Optional[bool] = None) -> Tensor:
    """Drop-in for `torch.nn.functional.affine_grid` (4-D and 5-D sizes)."""
    align_corners = resolve_align_corners(align_corners)
    _check(theta, size, bool(align_corners))
    batch, spatial = size[0], list(size[2:])
    dims = len(spatial)
    base = _base_grid(spatial, bool(align_corners), theta)
    # bmm against a base expanded to size's batch, as torch does: a size whose N is not theta's fails here
    # with torch's own message, and the gradient is torch's base^T @ grad
    grid = torch.bmm(base.unsqueeze(0).expand(batch, -1, -1), theta.transpose(1, 2))
    return grid.reshape([batch] + spatial + [dims])


def _check(theta: Tensor, size: Sequence[Size], align: bool) -> None:
    """torch's argument checks, with its exception types and messages."""
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    shape = _fixed_shape(theta)
    if len(size) == 4:
        if len(shape) != 3 or shape[-2:] != (2, 3):
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got {theta.shape}."
            )
    elif len(size) == 5:
        if len(shape) != 3 or shape[-2:] != (3, 4):
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got {theta.shape}."
            )
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. "
            f"Got size {size}."
        )
    if tracing() or exporting():
        return  # sizes are graph values there: comparing them would bake the example's into the graph
    if align and min(size[2:]) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when align_corners=True. "
            "This is not an intended use case of affine_grid. See the documentation of affine_grid for details.",
            stacklevel=3,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")


def _fixed_shape(theta: Tensor) -> Tuple[int, ...]:
    """theta's rank and matrix shape as Python ints even while tracing (a transform's shape is fixed, not a graph
    value); its batch is left alone, so torch.export keeps a dynamic batch dynamic."""
    if theta.dim() != 3:
        return tuple(range(theta.dim()))  # the wrong rank is all the check needs to know
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        return (-1, int(theta.shape[1]), int(theta.shape[2]))


def _base_grid(spatial: List[Size], align: bool, like: Tensor) -> Tensor:
    """torch's base grid, (x, y[, z], 1) at every output point with x fastest, as (points, dims + 1)."""
    dims = len(spatial)
    planes = []
    for k, n in enumerate(reversed(spatial)):  # x runs along the last spatial axis, y the one before, ...
        shape = [1] * dims
        shape[dims - 1 - k] = -1
        planes.append(_line(n, align, like).reshape(shape).expand(spatial))
    planes.append(torch.ones_like(planes[0]))
    return torch.stack(planes, dim=-1).reshape(-1, dims + 1)


def _line(n: Size, align: bool, like: Tensor) -> Tensor:
    """torch's linspace_from_neg_one: n pixel centres (align False) or corners (True) across [-1, 1], 0 if
    n is 1. (2i + 1 - n) / n or / (n - 1): exact integers and one correctly rounded division."""
    twice = torch.arange(n, device=like.device) * 2 + (1 - n)
    if isinstance(n, Tensor):
        # in floats: int64 Clip and Max need opset 12, and the Div needs matching types anyway
        span = n.to(like.dtype) if not align else (n - 1).to(like.dtype).clamp(min=1)
    else:
        span = n if not align else max(n - 1, 1)
    return twice.to(like.dtype) / span
