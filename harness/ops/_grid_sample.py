"""`grid_sample` from plain tensor ops, so every exporter and opset carries it, matching torch's CPU kernels.

Why it is shaped the way it is:
- Semantics follow torch's CPU kernels: the vectorised 2-D kernel (unnormalise as `(g+1)*(S/2)-0.5`, NaN
  clipped to 0, reflection by `trunc`) and the scalar 3-D kernel (`((g+1)*S-1)/2`, `std::min/max` clipping
  that sends NaN to S-1, reflection by `fmod`, out-of-range corners skipped). Bicubic pads each of its 16
  taps on its own. The 2-D kernel compiles to fused multiply-adds: float32 reproduces them (see `_fma`), so
  2-D bilinear is bit-exact in eager mode, as are nearest and 3-D.
- Zeros padding costs no masks: the input gets a frame of zeros and every tap index is clamped into that
  frame, so out-of-range taps read real zeros (an infinite input value never leaks through a zero weight).
  NaN coordinates are sent into the frame too (`where(x > lo, x, lo)` in graphs, `nan_to_num_` in eager).
- Speed: one base index per point, the other corners at constant offsets. Eager mode without autograd works
  on chunks of CHUNK_POINTS points with in-place updates and reused buffers; it gathers channels-first
  (`gather`, one index per point broadcast over C) and, from EAGER_ROWS_MIN_CHANNELS channels, sums
  channels-last rows with one `embedding_bag`. Graphs gather channels-first with GatherElements and int32
  indices, or, from ROWS_MIN_CHANNELS channels, C-wide rows with Gather and a batched MatMul. Below
  opset 11 (no GatherElements, no Round) rows are always used and rounding is emulated; below opset 10 so
  is `fmod`.
- float16/bfloat16 are computed in float32 and rounded once at the end (torch rounds every step instead,
  so results differ from native by native's own rounding error).
"""

from __future__ import annotations

import importlib
import itertools
import warnings
from typing import List, NamedTuple, Optional, Sequence, Union

import torch
import torch.nn.functional as F
from torch import Tensor

Size = Union[int, Tensor]  # a Python int in eager mode, a 0-d int64 tensor while tracing

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
CUBIC_A = -0.75
ROWS_MIN_CHANNELS = 64  # exported graphs: from this many channels up, row gathers match GatherElements
EAGER_ROWS_MIN_CHANNELS: Optional[int] = 32  # eager: embedding_bag over rows from this many channels
_PAD = {"bilinear": 2, "nearest": 1, "bicubic": 1}  # zero frame each mode's clamped taps need
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
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
            "Please specify align_corners=True if the old behavior is desired. See the documentation of "
            "grid_sample for details.",
            stacklevel=2,
        )
        align_corners = False
    _check_tensors(input, grid, mode)
    out_dtype = input.dtype
    if out_dtype in _REDUCED:
        input, grid = input.float(), grid.float()
    plan = _Plan(mode, padding_mode, bool(align_corners), input, grid)
    sizes = [input.shape[d] for d in range(2, input.dim())][::-1]  # W, H[, D]: the order of grid's last dim
    reader = _Reader(input, [s + 2 * plan.pad for s in sizes], plan)
    points = tuple(grid.shape[1:-1])
    if plan.inplace and grid.shape[0] * _numel(points) > CHUNK_POINTS:
        out = _sample_in_chunks(reader, grid, sizes, plan)
    else:
        out = _sample(reader.focus(0, input.shape[0], points), grid, sizes, plan)
    if mode == "nearest" and grid.requires_grad and torch.is_grad_enabled():
        out = out + _zero_linked_to(grid)
    return out.to(out_dtype) if out_dtype in _REDUCED else out


class _Plan:
    """What one call does, fixed before any tensor work."""

    def __init__(self, mode: str, padding: str, align: bool, input: Tensor, grid: Tensor) -> None:
        self.mode, self.padding, self.align = mode, padding, align
        self.volumetric = input.dim() == 5
        self.pad = _PAD[mode]
        self.opset = _onnx_opset()
        self.exporting = _tracing() or _exporting()
        # see _fma; graphs emulate it only where a pick depends on it (nearest): for the interpolating modes
        # it moves results by an ulp and costs onnxruntime four float64 passes per axis
        self.fused = not self.volumetric and input.dtype == torch.float32 and (not self.exporting or mode == "nearest")
        watched = torch.is_grad_enabled() and (input.requires_grad or grid.requires_grad)
        self.inplace = not (watched or self.exporting)  # may update large temporaries in place
        self.layout = _layout(_static_channels(input), self.exporting, self.opset, mode)
        # int32 indices halve onnxruntime's index traffic (eager torch widens them first, so gains nothing);
        # torch.gather takes them from 2.x, index_select always; a rows index spans the batch, which would
        # overflow only past 2**31 framed pixels of the whole batch
        narrow = self.exporting and (self.layout == "rows" or _INT32_GATHER)
        self.index_dtype = torch.int32 if narrow else torch.int64


# Argument checks, worded like torch's -----------------------------------------------------------------


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
    if not _tracing():  # sizes are tensors while tracing; the example inputs were checked in eager mode
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


# Export context --------------------------------------------------------------------------------------


def _tracing() -> bool:
    return bool(torch.jit.is_tracing())


def _exporting() -> bool:
    """Inside torch.export / the dynamo exporter, where in-place tricks buy nothing."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and getattr(compiler, "is_compiling", None) and compiler.is_compiling():
        return True
    return bool(torch.onnx.is_in_onnx_export())


def _onnx_opset() -> Optional[int]:
    """The opset of a running TorchScript ONNX export; None in eager mode, scripting-free tracing, dynamo."""
    if not _tracing() or not torch.onnx.is_in_onnx_export():
        return None
    for name in ("torch.onnx._internal.torchscript_exporter._globals", "torch.onnx._globals"):
        try:
            return int(importlib.import_module(name).GLOBALS.export_onnx_opset_version)
        except (ImportError, AttributeError):
            continue
    from torch.onnx import symbolic_helper

    return int(symbolic_helper._export_onnx_opset_version)


def _probe_int32_gather() -> bool:
    """Run once at import: an op failing inside a trace can crash torch 1.x's tracer later on."""
    try:
        torch.gather(torch.zeros(1), 0, torch.zeros(1, dtype=torch.int32))
        return True
    except RuntimeError:
        return False


_INT32_GATHER = _probe_int32_gather()


def _static_channels(input: Tensor) -> int:
    """C as a Python int even while tracing: it picks the graph's layout, so it is meant to be fixed."""
    if not _tracing():
        return int(input.shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        return int(input.shape[1])


def _layout(channels: int, exporting: bool, opset: Optional[int], mode: str) -> str:
    if opset is not None and opset < 11:
        return "rows"  # torch exports gather below opset 11 as a OneHot of the whole input
    if not exporting and mode == "nearest":
        return "channels"  # one gather: the two transposes of the rows layout would cost more than it saves
    threshold = ROWS_MIN_CHANNELS if exporting else EAGER_ROWS_MIN_CHANNELS
    return "rows" if threshold is not None and channels >= threshold else "channels"


def _const(value: Union[float, Size], like: Tensor) -> Tensor:
    """A 0-d tensor of `like`'s dtype; traced sizes stay in the graph instead of being baked in."""
    if isinstance(value, Tensor):
        return value.to(like.dtype)
    return torch.full((), value, dtype=like.dtype, device=like.device)


def _fsize(size: Size, like: Tensor) -> Union[float, Tensor]:
    return size.to(like.dtype) if isinstance(size, Tensor) else size


def _where_gt(x: Tensor, lo: Tensor) -> Tensor:
    return torch.where(x > lo, x, lo)  # NaN fails the test and becomes `lo`


def _where_lt(x: Tensor, hi: Tensor) -> Tensor:
    return torch.where(x < hi, x, hi)  # NaN fails the test and becomes `hi`


def _zero_linked_to(grid: Tensor) -> Tensor:
    """0 that depends on `grid`, so nearest mode yields zero grid gradients as native does, not None."""
    finite = torch.where(torch.isfinite(grid), grid, torch.zeros_like(grid))
    return finite.sum() * 0


# Coordinates ----------------------------------------------------------------------------------------


def _unnormalize(g: Tensor, size: Size, plan: _Plan) -> Tensor:
    s = _fsize(size, g)
    own = plan.inplace and not isinstance(s, Tensor)  # may reuse the one fresh buffer (g + 1)
    if plan.volumetric:  # the scalar 3-D kernel's arithmetic
        if own:
            return (g + 1).div_(2).mul_(s - 1) if plan.align else (g + 1).mul_(s).sub_(1).div_(2)
        return ((g + 1) / 2) * (s - 1) if plan.align else ((g + 1) * s - 1) / 2
    if plan.align:  # the vectorised 2-D kernel's (g + 1) * scale, and fused (g + 1) * scale - 0.5 below
        return (g + 1).mul_((s - 1) / 2) if own else (g + 1) * ((s - 1) / 2)
    return _fma(g + 1, s / 2, -0.5, plan)


def _clip(x: Tensor, size: Size, plan: _Plan) -> Tensor:
    """Into [0, S-1]; exactly at a bound the gradient is 0, as in torch's clip_coordinates_set_grad."""
    if plan.inplace and not isinstance(size, Tensor):
        return x.nan_to_num_(nan=size - 1 if plan.volumetric else 0.0).clamp_(0, size - 1)
    hi, zero = _const(size - 1, x), _const(0.0, x)
    if plan.exporting:  # one Where instead of two (Max/Min keep NaN; graphs need no gradient rule)
        return torch.where(torch.isnan(x), hi if plan.volumetric else zero, torch.min(torch.max(x, zero), hi))
    if plan.volumetric:  # std::min(S-1, std::max(x, 0)): NaN ends at S-1
        return _where_gt(_where_lt(x, hi), zero)
    return _where_lt(_where_gt(x, zero), hi)  # vectorised clamp: NaN ends at 0


def _reflect(x: Tensor, size: Size, plan: _Plan) -> Tensor:
    """Mirror about -0.5 and S-0.5 (align_corners False) or 0 and S-1 (True); the caller clips after."""
    if plan.align and not isinstance(size, Tensor) and size <= 1:
        return torch.zeros_like(x)  # a one-pixel axis reflects everything to 0
    low = 0.0 if plan.align else -0.5
    span = _const(size - 1 if plan.align else size, x)
    a = (x - low).abs()
    if plan.volumetric:
        out = _reflect_fmod(a, low, span, plan)
    else:
        twice = span * 2
        extra = a - torch.floor(a / twice) * twice  # a >= 0, so floor is torch's trunc
        mirrored = twice - extra
        out = torch.where(extra > mirrored, mirrored, extra) + low
    if plan.align and isinstance(size, Tensor):
        out = torch.where(span > 0, out, torch.zeros_like(out))
    return out


def _reflect_fmod(a: Tensor, low: float, span: Tensor, plan: _Plan) -> Tensor:
    flips = torch.floor(a / span)
    if plan.opset is not None and plan.opset < 10:  # no Mod: an exact fmod for |a| below 2**24 (fp32)
        extra = a - flips * span
        extra = torch.where(extra < 0, extra + span, extra)
        extra = torch.where(extra >= span, extra - span, extra)
    else:
        extra = torch.fmod(a, span)
    return torch.where(_is_odd(flips, plan), span - extra, extra) + low


def _is_odd(whole: Tensor, plan: _Plan) -> Tensor:
    return _equal(whole - torch.floor(whole / 2) * 2, _const(1.0, whole), plan)


def _equal(a: Tensor, b: Tensor, plan: _Plan) -> Tensor:
    if plan.opset is None or plan.opset >= 11:
        return a == b
    return ~((a < b) | (a > b))  # Equal takes no floats before opset 11; NaN operands read as equal


def _pad_coordinate(x: Tensor, size: Size, plan: _Plan) -> Tensor:
    if plan.padding == "border":
        return _clip(x, size, plan)
    if plan.padding == "reflection":
        return _clip(_reflect(x, size, plan), size, plan)
    return x


# torch < 2.1 rounds 3-D nearest ties away from zero (std::round; pytorch#97000 made it half-to-even):
# a drop-in matches the torch it runs beside.
_OLD_3D_NEAREST = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 1)


def _round_half_away(x: Tensor) -> Tensor:
    return torch.floor(x.abs() + 0.5) * torch.sign(x)


def _round_half_even(x: Tensor, plan: _Plan) -> Tensor:
    if plan.opset is None or plan.opset >= 11:
        return torch.round(x)
    down = torch.floor(x)  # no Round before opset 11
    half = _const(0.5, x)
    up = ((x - down) > half) | (_equal(x - down, half, plan) & _is_odd(down, plan))
    return down + up.to(x.dtype)


# Taps along one axis ---------------------------------------------------------------------------------


class _Axis(NamedTuple):
    """One axis of the grid: integer tap indices into the zero-framed input, and their weights."""

    taps: List[Tensor]  # bilinear: the lower tap (the upper is +1); nearest: one; bicubic: four
    weights: List[Tensor]  # bilinear [1 - w, w]; bicubic four coefficients; nearest none


def _axis(plan: _Plan, g: Tensor, size: Size) -> _Axis:
    x = _unnormalize(g, size, plan)
    if plan.mode == "bicubic":
        x0 = torch.floor(x)
        taps = [_frame_index(_pad_coordinate(x0 + k, size, plan), size, plan, 0) for k in (-1, 0, 1, 2)]
        return _Axis(taps, _cubic_weights(x - x0))
    x = _pad_coordinate(x, size, plan)
    if plan.mode == "nearest":
        rounded = _round_half_away(x) if plan.volumetric and _OLD_3D_NEAREST else _round_half_even(x, plan)
        return _Axis([_frame_index(rounded, size, plan, 0)], [])
    if plan.volumetric and plan.padding == "zeros":
        x = _finite_or_far(x, plan)
    x0 = torch.floor(x)
    if plan.volumetric:
        e = (x0 + 1) - x  # the scalar kernel's `(ix_bse - ix)`
    w = x.sub_(x0) if plan.inplace else x - x0
    if not plan.volumetric:
        e = 1 - w
    return _Axis([_frame_index(x0, size, plan, 1)], [e, w])


def _finite_or_far(x: Tensor, plan: _Plan) -> Tensor:
    """The 3-D kernel skips out-of-range corners instead of weighting them, so NaN/inf points give 0."""
    far = -(2.0**30)
    if plan.inplace:
        return x.nan_to_num_(nan=far, posinf=far, neginf=far)
    inf = float("inf")
    finite = (x > _const(-inf, x)) & (x < _const(inf, x))
    return torch.where(finite, x, _const(far, x))


def _frame_index(x: Tensor, size: Size, plan: _Plan, reach: int) -> Tensor:
    """Integer tap index clamped into [-pad, S + pad - 1 - reach], so taps x..x+reach beyond the input
    read the frame of zeros (the flat index adds the frame offset once). NaN lands on the frame:
    irrelevant where weights are NaN too, and a zero for nearest, as in torch."""
    lo = -plan.pad
    if not plan.exporting and not isinstance(size, Tensor):
        hi = size + plan.pad - 1 - reach
        x = x.detach()  # integer indices carry no gradient, so this buffer may be reused in place
        return x.nan_to_num_(nan=lo, posinf=hi, neginf=lo).clamp_(lo, hi).to(plan.index_dtype)
    if plan.padding != "zeros":
        return x.to(plan.index_dtype)  # clipped into [0, S-1] already; the frame holds every reach
    # Max/Min cost a tenth of Greater+Where in onnxruntime but keep NaN, which the round trip through
    # int32 turns into some finite value first (any value will do: both sides of the frame read zeros)
    finite = x.to(torch.int32).to(x.dtype)
    hi_t = _const(size + (plan.pad - 1 - reach), x)
    return torch.min(torch.max(finite, _const(float(lo), x)), hi_t).to(plan.index_dtype)


def _cubic_weights(t: Tensor) -> List[Tensor]:
    a = CUBIC_A  # torch's kernel fuses some of these multiply-adds too; which ones, no trial here matched

    def outer(v: Tensor) -> Tensor:  # 1 < |v| < 2
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a

    def inner(v: Tensor) -> Tensor:  # |v| <= 1
        return ((a + 2) * v - (a + 3)) * v * v + 1

    return [outer(t + 1), inner(t), inner(1 - t), outer(2 - t)]


def _fma(x: Tensor, y: Union[float, Tensor], z: float, plan: _Plan) -> Tensor:
    """x * y + z rounded once, like the fused multiply-add that torch's vectorised 2-D kernel compiles to
    (on every x86 build checked: 1.8.1, 1.12.1, 2.13): exact through float64 for float32 operands."""
    if not plan.fused:
        return x * y + z
    wide = y.double() if isinstance(y, Tensor) else y
    return (x.double() * wide + z).float()


# Gathering and accumulating --------------------------------------------------------------------------


def _sample_in_chunks(reader: _Reader, grid: Tensor, sizes: Sequence[Size], plan: _Plan) -> Tensor:
    """A few batch items, or a slice of one item's points, at a time (eager, no autograd): half the time of
    streaming every temporary through memory at full size, and no fresh pages to fault in."""
    n, points, dims = grid.shape[0], tuple(grid.shape[1:-1]), grid.shape[-1]
    p = _numel(points)
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


def _sample(reader: _Reader, grid: Tensor, sizes: Sequence[Size], plan: _Plan) -> Tensor:
    padded = [s + 2 * plan.pad for s in sizes]  # W', H'[, D']
    axes = [_axis(plan, g, size) for g, size in zip(_coordinates(grid, plan), sizes)]
    order = axes[::-1]  # slowest axis first (z, y, x), the order of torch's loops and of flat indices
    if plan.mode == "nearest":
        return reader.finish(reader.read(_combine([a.taps[0] for a in order], padded, reader.offset, plan)))
    if plan.mode == "bicubic":
        rows = _cubic_rows(order[0], order[1], padded[0], reader)
    else:
        looped = reader.layout == "channels" and not plan.exporting
        rows = [(_Corners(order, padded, reader, plan, reuse=looped and plan.inplace), None)]
    if reader.layout == "channels" and not plan.exporting:  # eager: one gather per tap, in place
        return reader.finish(_loop_sum(rows, reader, plan))
    if reader.layout == "channels" and plan.mode == "bilinear":  # graphs: indices from one broadcast Add
        corners = rows[0][0]
        base, terms = corners.base, list(corners.offsets())
    else:
        base, terms = None, [term for row, row_weight in rows for term in _weighted(row, row_weight)]
    group = GRAPH_TAPS_PER_GATHER if reader.layout == "channels" else len(terms)
    total = None
    for k in range(0, len(terms), group):  # shaped before summing: the last Add writes the output itself
        part = reader.finish(reader.weighted_sum(terms[k : k + group], base))
        total = part if total is None else total + part
    return total


def _coordinates(grid: Tensor, plan: _Plan) -> List[Tensor]:
    """x, y[, z] planes of the grid: strided views in eager mode; in graphs one Transpose and contiguous
    slices, since onnxruntime gathers a last-axis slice element by element (4x slower at N16 256x256)."""
    dims = grid.shape[-1]
    if not plan.exporting:
        return [grid[..., d] for d in range(dims)]
    moved = grid.permute((grid.dim() - 1,) + tuple(range(grid.dim() - 1)))
    return [moved[d] for d in range(dims)]


def _combine(indices: List[Tensor], padded: Sequence[Size], offset: Optional[Tensor], plan: _Plan) -> Tensor:
    """Row-major flat index ((z * H' + y) * W' + x) into the framed input, plus the batch offset of the
    rows layout; the frame shifts every axis by `pad`, added here once."""
    flat = indices[0] if offset is None else indices[0] + offset
    for index, stride in zip(indices[1:], padded[::-1][1:]):
        flat = flat.mul_(stride).add_(index) if plan.inplace else flat * stride + index
    shift = plan.pad * sum(_numel(padded[:k]) for k in range(len(padded)))  # pad * (1 + W' + H'W')
    return flat.add_(shift) if plan.inplace else flat + shift


class _Corners:
    """Bi/trilinear taps in torch's corner order (t/b, n/s, w/e): index = base + step, weight = product.
    With `reuse`, every corner is computed into the same two buffers (consume each before the next)."""

    def __init__(self, order: List[_Axis], padded, reader: _Reader, plan: _Plan, reuse: bool) -> None:
        self.base = _combine([a.taps[0] for a in order], padded, reader.offset, plan)
        self.units = [_numel(padded[:k]) for k in range(len(padded))][::-1]  # H'W'?, W', 1
        self.order, self.reuse = order, reuse

    def _corners(self):
        for bits in itertools.product((0, 1), repeat=len(self.order)):
            step = sum(u for b, u in zip(bits, self.units) if b)
            yield bits, step, [a.weights[b] for a, b in zip(self.order[::-1], bits[::-1])]  # x, y[, z]

    def offsets(self):
        """(step, weight) per corner, for graphs that add every step to `base` in one broadcast."""
        for _, step, factors in self._corners():
            weight = factors[0] * factors[1]
            for f in factors[2:]:
                weight = weight * f
            yield step, weight

    def __iter__(self):
        index_buffer = weight_buffer = None
        for bits, step, factors in self._corners():
            if self.reuse:
                index = torch.add(self.base, step, out=index_buffer) if any(bits) else self.base
                index_buffer = index if any(bits) else index_buffer
                weight = weight_buffer = torch.mul(factors[0], factors[1], out=weight_buffer)
                for f in factors[2:]:
                    weight.mul_(f)
            else:
                index = self.base + step if any(bits) else self.base
                weight = factors[0] * factors[1]
                for f in factors[2:]:
                    weight = weight * f  # (wx * wy) * wz, torch's product order
            yield index, weight


def _cubic_rows(y: _Axis, x: _Axis, width: Size, reader: _Reader):
    """Bicubic: per y tap, its four x taps with the x coefficients, and the row's y coefficient."""
    rows = []
    for row in range(4):
        start = y.taps[row] if reader.offset is None else y.taps[row] + reader.offset
        start = start * width + reader.pad * (width + 1)  # the frame shift of both axes
        rows.append((list(zip([start + tap for tap in x.taps], x.weights)), y.weights[row]))
    return rows


def _weighted(row, row_weight: Optional[Tensor]):
    for index, weight in row:
        yield index, weight if row_weight is None else weight * row_weight


def _loop_sum(rows, reader: _Reader, plan: _Plan) -> Tensor:
    """One gather per tap, summed left to right as torch does (rows of bicubic taps first)."""
    total = _Sum(plan)
    for row, row_weight in rows:
        line = _Sum(plan)
        for index, weight in row:
            line.add(reader.read(index, line.spare()), reader.spread(weight))
        if row_weight is None:
            return line.result()
        total.add(line.result(), reader.spread(row_weight))
    return total.result()


class _Sum:
    """Left-to-right sum of value * weight; in place, on one reused scratch buffer, when allowed."""

    def __init__(self, plan: _Plan) -> None:
        # torch's 2-D kernel compiles to fused multiply-adds, its 3-D kernel does not: so does this sum
        # (graphs spell addcmul as two multiplies and an add, so they keep the plain form)
        self.inplace, self.fused = plan.inplace, not plan.volumetric and not plan.exporting
        self.total: Optional[Tensor] = None
        self.scratch: Optional[Tensor] = None

    def spare(self) -> Optional[Tensor]:
        return self.scratch if self.inplace and self.total is not None else None

    def add(self, value: Tensor, weight: Tensor) -> None:
        if self.total is None:
            self.total = value.mul_(weight) if self.inplace else value * weight
        elif self.inplace:
            if self.fused:
                self.total.addcmul_(value, weight)  # also one pass instead of two
            else:
                self.total.add_(value.mul_(weight))
            self.scratch = value
        elif self.fused:
            self.total = torch.addcmul(self.total, value, weight)
        else:
            self.total = self.total + value * weight

    def result(self) -> Tensor:
        assert self.total is not None
        return self.total


class _Reader:
    """Tap values from the zero-framed input: channels-first `gather` or channels-last row `index_select`."""

    def __init__(self, input: Tensor, padded: Sequence[Size], plan: _Plan) -> None:
        n, c = input.shape[0], input.shape[1]
        frames = (plan.pad,) * (2 * len(padded))
        self.frame, self.slowest = _numel(padded), padded[-1]
        self.layout, self.exporting, self.c, self.pad = plan.layout, plan.exporting, c, plan.pad
        self.batch = n
        if self.layout == "rows":  # pad channels-first, then one (C, L) -> (L, C) transpose: fastest
            self.whole = F.pad(input, frames).reshape(n, c, self.frame).transpose(1, 2).reshape(n * self.frame, c)
        else:
            self.whole = F.pad(input, frames).reshape(n, c, self.frame)

    def focus(self, n0: Size, n1: Size, points: Sequence[Size]) -> _Reader:
        """Read for batch items n0..n1 at points of this shape (the whole batch unless chunking)."""
        n, p = n1 if n0 == 0 else n1 - n0, _numel(points)
        self.n, self.points = n, tuple(points)
        self.offset: Optional[Tensor] = None
        full = isinstance(n1, Tensor) or (n0, n1) == (0, self.batch)  # sizes are tensors while tracing
        if self.layout == "rows":
            self.table = self.whole if full else self.whole[n0 * self.frame : n1 * self.frame]
            self.index_shape, self.weight_shape = (n * p,), (n * p, 1)
            batch = torch.arange(n, device=self.whole.device).view((-1,) + (1,) * len(self.points))
            self.offset = batch * self.slowest  # on the slowest axis, so it scales to n * frame
        else:
            self.table = self.whole if full else self.whole[n0:n1]
            self.index_shape, self.weight_shape, self.expanded = (n, 1, p), (n, 1, p), (n, self.c, p)
        return self

    def read(self, flat: Tensor, out: Optional[Tensor] = None) -> Tensor:
        index = flat.reshape(self.index_shape)
        if self.layout == "rows":
            return torch.index_select(self.table, 0, index, out=out)
        return torch.gather(self.table, 2, index.expand(self.expanded), out=out)

    def spread(self, w: Tensor) -> Tensor:
        return w.reshape(self.weight_shape)

    def weighted_sum(self, terms, base: Optional[Tensor] = None) -> Tensor:
        """These taps in one embedding_bag (eager rows), one Gather and a batched MatMul (graph rows, where
        it beats per-tap Mul and Add by a third), or one GatherElements (graph channels-first). Terms are
        (index, weight), or (step, weight) with the `base` index every step is added to."""
        indices, weights = zip(*terms)
        k = len(indices)
        if base is not None:  # one Add broadcasts base x steps x channels: no Concat, no Expand
            steps = torch.stack([_const(step, base) for step in indices]).view(1, 1, k, 1)
            index = (base.reshape(self.n, 1, 1, -1) + steps.expand(1, self.c, k, 1)).reshape(self.n, self.c, -1)
            values = torch.gather(self.table, 2, index)
            weight = torch.stack([w.reshape(self.index_shape) for w in weights], 2)  # (N, 1, K, P)
            return (values.reshape(self.expanded[:2] + (k,) + self.expanded[2:]) * weight).sum(2)
        if self.layout == "rows":
            index = torch.stack([i.reshape(self.index_shape) for i in indices], 1)  # (rows, K)
            weight = torch.stack([w.reshape(self.index_shape) for w in weights], 1)
            if not self.exporting:
                return F.embedding_bag(index, self.table, mode="sum", per_sample_weights=weight)
            values = torch.index_select(self.table, 0, index.reshape(-1)).reshape(-1, k, self.c)
            return torch.matmul(weight.unsqueeze(1), values).reshape(-1, self.c)
        index = torch.cat([i.reshape(self.index_shape) for i in indices], 2)  # (N, 1, K * P)
        values = torch.gather(self.table, 2, index.expand(self.n, self.c, index.shape[2]))
        weight = torch.stack([w.reshape(self.index_shape) for w in weights], 2)  # (N, 1, K, P)
        return (values.reshape(self.expanded[:2] + (k,) + self.expanded[2:]) * weight).sum(2)

    def finish(self, out: Tensor) -> Tensor:
        if self.layout != "rows":
            return out.reshape((self.n, self.c) + self.points)
        last = len(self.points) + 1  # channels-last to first as the final op: its output is the result
        out = out.reshape((self.n,) + self.points + (self.c,)).permute((0, last) + tuple(range(1, last)))
        return out.contiguous()


def _numel(shape: Sequence[Size]) -> Size:
    total: Size = 1
    for s in shape:
        total = total * s
    return total
