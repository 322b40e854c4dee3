"""`grid_sample` from plain tensor ops, so every exporter and opset carries it, matching torch's CPU kernels.

This module plans a call and runs it; `_grid_coords` holds the coordinate arithmetic, `_grid_taps` the
gathering and summing. Why it is shaped the way it is:
- Semantics follow torch's CPU kernels: the vectorised 2-D kernel (unnormalise as `(g+1)*(S/2)-0.5`, NaN
  clipped to 0, reflection by `trunc`) and the scalar 3-D kernel (`((g+1)*S-1)/2`, `std::min/max` clipping
  that sends NaN to S-1, reflection by `fmod`, out-of-range corners skipped). Bicubic pads each of its 16
  taps on its own. The 2-D kernel compiles to fused multiply-adds: float32 reproduces them (see `_fma`), so
  2-D bilinear is bit-exact in eager mode, as are nearest and 3-D. Graphs emulate the FMA for nearest only.
- Zeros padding costs no masks: the input gets a frame of zeros and every tap index is clamped into that
  frame, so out-of-range taps read real zeros (an infinite input value never leaks through a zero weight).
  NaN coordinates land in the frame too (`nan_to_num_` in eager mode; in graphs a round trip through int32
  makes them finite before Max/Min, which onnxruntime runs ten times faster than Greater+Where).
- Speed: one base index per point, the other corners at constant offsets. Eager mode without autograd works
  on chunks of CHUNK_POINTS points with in-place updates and reused buffers; it gathers channels-first
  (`gather`, one index per point broadcast over C) and, from EAGER_ROWS_MIN_CHANNELS channels, sums
  channels-last rows with one `embedding_bag`. Graphs gather channels-first with GatherElements and int32
  indices (built by one broadcasting Add), or, from ROWS_MIN_CHANNELS channels, C-wide rows with Gather
  and a batched MatMul. Below opset 11 (no GatherElements, no Round) rows are always used and rounding is
  emulated; below opset 10 so is `fmod`. bench-op's numbers for each choice are in README.
- float16/bfloat16 are computed in float32 and rounded once at the end (torch rounds every step instead,
  so results differ from native by native's own rounding error).
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import torch
from torch import Tensor

from harness.ops._grid_coords import Size, axis
from harness.ops._grid_plan import Plan, resolve_align_corners, tracing
from harness.ops._grid_taps import Corners, Reader, combine, cubic_rows, loop_sum, numel, weighted

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
_REDUCED = (torch.float16, torch.bfloat16)
# Taps gathered together in graphs of the channels-first layout: onnxruntime at N16 C3 256x256 took
# 32 / 35 / 41 ms and 169 / 132 / 104 MB at peak for 4 / 2 / 1 taps per GatherElements (bench_op).
GRAPH_TAPS_PER_GATHER = 2
CHUNK_POINTS = 1 << 17  # eager without autograd samples this many points at a time: temporaries stay cached


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: Optional[bool] = None,
) -> Tensor:
    """Drop-in for `torch.nn.functional.grid_sample` (4-D and 5-D, every mode and padding)."""
    _check_modes(mode, padding_mode)
    align_corners = resolve_align_corners(align_corners)
    _check_tensors(input, grid, mode)
    out_dtype = input.dtype
    if out_dtype in _REDUCED:
        input, grid = input.float(), grid.float()
    plan = Plan(mode, padding_mode, bool(align_corners), input, grid)
    sizes = [input.shape[d] for d in range(2, input.dim())][::-1]  # W, H[, D]: the order of grid's last dim
    reader = Reader(input, [s + 2 * plan.pad for s in sizes], plan)
    points = tuple(grid.shape[1:-1])
    if plan.inplace and grid.shape[0] * numel(points) > CHUNK_POINTS:
        out = _sample_in_chunks(reader, grid, sizes, plan)
    else:
        out = _sample(reader.focus(0, input.shape[0], points), grid, sizes, plan)
    if mode == "nearest" and grid.requires_grad and torch.is_grad_enabled():
        out = out + _zero_linked_to(grid)
    return out.to(out_dtype) if out_dtype in _REDUCED else out


def _check_modes(mode: str, padding_mode: str) -> None:
    if mode not in MODES:
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
            + f"but got: '{mode}'"
        )
    if padding_mode not in PADDINGS:
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', "
            f"but got: '{padding_mode}'"
        )


def _check_tensors(input: Tensor, grid: Tensor, mode: str) -> None:
    isz, gsz = list(input.shape), list(grid.shape)
    if input.dtype != grid.dtype:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to have same dtype, but input has {input.dtype} "
            f"and grid has {grid.dtype}"
        )
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"grid_sampler(): not implemented for {input.dtype}")
    if not tracing():  # sizes are tensors while tracing; the example inputs were checked in eager mode
        if input.dim() and grid.dim() and isz[0] != gsz[0]:
            raise RuntimeError(
                "grid_sampler(): expected grid and input to have same batch size, but got input with "
                f"sizes {isz} and grid with sizes {gsz}"
            )
        if grid.dim() and gsz[-1] != input.dim() - 2:
            raise RuntimeError(
                f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got "
                f"grid with sizes {gsz}"
            )
        for d in range(2, input.dim()):
            if isz[d] == 0:
                raise RuntimeError(
                    "grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                    f"sizes {isz} with dimension {d} being empty"
                )
    rank = input.dim() if input.dim() == 4 else 5
    if input.dim() != rank or grid.dim() != rank:
        raise RuntimeError(
            f"grid_sampler(): expected {rank}D input and grid with same number of dimensions, but got "
            f"input with sizes {isz} and grid with sizes {gsz}"
        )
    if rank == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")


# Sampling ---------------------------------------------------------------------------------------------


def _zero_linked_to(grid: Tensor) -> Tensor:
    """0 that depends on `grid`, so nearest mode yields zero grid gradients as native does, not None."""
    finite = torch.where(torch.isfinite(grid), grid, torch.zeros_like(grid))
    return finite.sum() * 0


def _sample_in_chunks(reader: Reader, grid: Tensor, sizes: Sequence[Size], plan: Plan) -> Tensor:
    """A few batch items, or a slice of one item's points, at a time (eager, no autograd): half the time of
    streaming every temporary through memory at full size, and no fresh pages to fault in."""
    n, points, dims = grid.shape[0], tuple(grid.shape[1:-1]), grid.shape[-1]
    p = numel(points)
    flat_grid = grid.reshape(n, p, dims)
    out = grid.new_empty((n, reader.c, p))
    items = max(1, CHUNK_POINTS // p)
    step = p if items > 1 else CHUNK_POINTS
    for n0 in range(0, n, items):
        n1 = min(n, n0 + items)
        for p0 in range(0, p, step):
            part = flat_grid[n0:n1, p0 : p0 + step]
            out[n0:n1, :, p0 : p0 + step] = _sample(reader.focus(n0, n1, part.shape[1:2]), part, sizes, plan)
    return out.reshape((n, reader.c) + points)


def _sample(reader: Reader, grid: Tensor, sizes: Sequence[Size], plan: Plan) -> Tensor:
    padded = [s + 2 * plan.pad for s in sizes]  # W', H'[, D']
    axes = [axis(plan, g, size) for g, size in zip(_coordinates(grid, plan), sizes)]
    order = axes[::-1]  # slowest axis first (z, y, x), the order of torch's loops and of flat indices
    if plan.mode == "nearest":
        return reader.finish(reader.read(combine([a.taps[0] for a in order], padded, reader.offset, plan)))
    if plan.mode == "bicubic":
        rows = cubic_rows(order[0], order[1], padded[0], reader)
    else:
        looped = reader.layout == "channels" and not plan.exporting
        rows = [(Corners(order, padded, reader, plan, reuse=looped and plan.inplace), None)]
    if reader.layout == "channels" and not plan.exporting:  # eager: one gather per tap, in place
        return reader.finish(loop_sum(rows, reader, plan))
    if reader.layout == "channels" and plan.mode == "bilinear":  # graphs: indices from one broadcast Add
        corners = rows[0][0]
        base, terms = corners.base, list(corners.offsets())
    else:
        base, terms = None, [term for row, row_weight in rows for term in weighted(row, row_weight)]
    group = GRAPH_TAPS_PER_GATHER if reader.layout == "channels" else len(terms)
    total = None
    for k in range(0, len(terms), group):  # shaped before summing: the last Add writes the output itself
        part = reader.finish(reader.weighted_sum(terms[k : k + group], base))
        total = part if total is None else total + part
    return total


def _coordinates(grid: Tensor, plan: Plan) -> List[Tensor]:
    """x, y[, z] planes of the grid: strided views in eager mode; in graphs one Transpose and contiguous
    slices, since onnxruntime gathers a last-axis slice element by element (4x slower at N16 256x256)."""
    dims = grid.shape[-1]
    if not plan.exporting:
        return [grid[..., d] for d in range(dims)]
    moved = grid.permute((grid.dim() - 1,) + tuple(range(grid.dim() - 1)))
    return [moved[d] for d in range(dims)]
