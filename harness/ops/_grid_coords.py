"""Coordinates of `grid_sample`: unnormalising, padding (border, reflection), rounding, and the integer
taps with their weights along one axis, each following torch's CPU kernels (see `_grid_sample`)."""

from __future__ import annotations

from typing import List, NamedTuple, Union

import torch
from torch import Tensor

from harness.ops._grid_plan import Plan

Size = Union[int, Tensor]  # a Python int in eager mode, a 0-d int64 tensor while tracing
CUBIC_A = -0.75


def const(value: Union[float, Size], like: Tensor) -> Tensor:
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


# Coordinates ----------------------------------------------------------------------------------------


def _unnormalize(g: Tensor, size: Size, plan: Plan) -> Tensor:
    s = _fsize(size, g)
    own = plan.inplace and not isinstance(s, Tensor)  # may reuse the one fresh buffer (g + 1)
    if plan.volumetric:  # the scalar 3-D kernel's arithmetic
        if own:
            return (g + 1).div_(2).mul_(s - 1) if plan.align else (g + 1).mul_(s).sub_(1).div_(2)
        return ((g + 1) / 2) * (s - 1) if plan.align else ((g + 1) * s - 1) / 2
    if plan.align:  # the vectorised 2-D kernel's (g + 1) * scale, and fused (g + 1) * scale - 0.5 below
        return (g + 1).mul_((s - 1) / 2) if own else (g + 1) * ((s - 1) / 2)
    return _fma(g + 1, s / 2, -0.5, plan)


def _clip(x: Tensor, size: Size, plan: Plan) -> Tensor:
    """Into [0, S-1]; exactly at a bound the gradient is 0, as in torch's clip_coordinates_set_grad."""
    if plan.inplace and not isinstance(size, Tensor):
        return x.nan_to_num_(nan=size - 1 if plan.volumetric else 0.0).clamp_(0, size - 1)
    hi, zero = const(size - 1, x), const(0.0, x)
    if plan.lean:  # one Where instead of two: Max/Min keep NaN, and split the gradient at a bound
        return torch.where(torch.isnan(x), hi if plan.volumetric else zero, torch.min(torch.max(x, zero), hi))
    if plan.volumetric:  # std::min(S-1, std::max(x, 0)): NaN ends at S-1
        return _where_gt(_where_lt(x, hi), zero)
    return _where_lt(_where_gt(x, zero), hi)  # vectorised clamp: NaN ends at 0


def _reflect(x: Tensor, size: Size, plan: Plan) -> Tensor:
    """Mirror about -0.5 and S-0.5 (align_corners False) or 0 and S-1 (True); the caller clips after."""
    if plan.align and not isinstance(size, Tensor) and size <= 1:
        return torch.zeros_like(x)  # a one-pixel axis reflects everything to 0
    low = 0.0 if plan.align else -0.5
    span = const(size - 1 if plan.align else size, x)
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


def _reflect_fmod(a: Tensor, low: float, span: Tensor, plan: Plan) -> Tensor:
    flips = torch.floor(a / span)
    if plan.opset is not None and plan.opset < 10:  # no Mod: an exact fmod for |a| below 2**24 (fp32)
        extra = a - flips * span
        extra = torch.where(extra < 0, extra + span, extra)
        extra = torch.where(extra >= span, extra - span, extra)
    else:
        extra = torch.fmod(a, span)
    return torch.where(_is_odd(flips, plan), span - extra, extra) + low


def _is_odd(whole: Tensor, plan: Plan) -> Tensor:
    return _equal(whole - torch.floor(whole / 2) * 2, const(1.0, whole), plan)


def _equal(a: Tensor, b: Tensor, plan: Plan) -> Tensor:
    if plan.opset is None or plan.opset >= 11:
        return a == b
    return ~((a < b) | (a > b))  # Equal takes no floats before opset 11; NaN operands read as equal


def _pad_coordinate(x: Tensor, size: Size, plan: Plan) -> Tensor:
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


def _round_half_even(x: Tensor, plan: Plan) -> Tensor:
    if plan.opset is None or plan.opset >= 11:
        return torch.round(x)
    down = torch.floor(x)  # no Round before opset 11
    half = const(0.5, x)
    up = ((x - down) > half) | (_equal(x - down, half, plan) & _is_odd(down, plan))
    return down + up.to(x.dtype)


# Taps along one axis ---------------------------------------------------------------------------------


class Axis(NamedTuple):
    """One axis of the grid: integer tap indices into the zero-framed input, and their weights."""

    taps: List[Tensor]  # bilinear: the lower tap (the upper is +1); nearest: one; bicubic: four
    weights: List[Tensor]  # bilinear [1 - w, w]; bicubic four coefficients; nearest none


def axis(plan: Plan, g: Tensor, size: Size) -> Axis:
    x = _unnormalize(g, size, plan)
    if plan.mode == "bicubic":
        x0 = torch.floor(x)
        taps = [_frame_index(_pad_coordinate(x0 + k, size, plan), size, plan, 0) for k in (-1, 0, 1, 2)]
        return Axis(taps, _cubic_weights(x - x0))
    x = _pad_coordinate(x, size, plan)
    if plan.mode == "nearest":
        rounded = _round_half_away(x) if plan.volumetric and _OLD_3D_NEAREST else _round_half_even(x, plan)
        return Axis([_frame_index(rounded, size, plan, 0)], [])
    if plan.volumetric and plan.padding == "zeros":
        x = _finite_or_far(x, plan)
    x0 = torch.floor(x)
    if plan.volumetric:
        e = (x0 + 1) - x  # the scalar kernel's `(ix_bse - ix)`
    w = x.sub_(x0) if plan.inplace else x - x0
    if not plan.volumetric:
        e = 1 - w
    return Axis([_frame_index(x0, size, plan, 1)], [e, w])


def _finite_or_far(x: Tensor, plan: Plan) -> Tensor:
    """The 3-D kernel skips out-of-range corners instead of weighting them, so NaN/inf points give 0."""
    far = -(2.0**30)
    if plan.inplace:
        return x.nan_to_num_(nan=far, posinf=far, neginf=far)
    inf = float("inf")
    finite = (x > const(-inf, x)) & (x < const(inf, x))
    return torch.where(finite, x, const(far, x))


def _frame_index(x: Tensor, size: Size, plan: Plan, reach: int) -> Tensor:
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
    # Max/Min cost a tenth of Greater+Where in onnxruntime but keep NaN. A round trip through int32 makes
    # every value finite: +-inf and values beyond int32 land on either side of the frame, both zeros; NaN
    # lands where the platform puts it (INT_MIN on x86, 0 on ARM and CUDA), which only nearest, whose
    # output no NaN weight covers, must send to the frame itself
    if plan.mode == "nearest":
        x = torch.where(torch.isnan(x), const(float(lo), x), x)
    finite = x.to(torch.int32).to(x.dtype)
    hi_t = const(size + (plan.pad - 1 - reach), x)
    return torch.min(torch.max(finite, const(float(lo), x)), hi_t).to(plan.index_dtype)


def _cubic_weights(t: Tensor) -> List[Tensor]:
    a = CUBIC_A  # torch's kernel fuses some of these multiply-adds too; which ones, no trial here matched

    def outer(v: Tensor) -> Tensor:  # 1 < |v| < 2
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a

    def inner(v: Tensor) -> Tensor:  # |v| <= 1
        return ((a + 2) * v - (a + 3)) * v * v + 1

    return [outer(t + 1), inner(t), inner(1 - t), outer(2 - t)]


def _fma(x: Tensor, y: Union[float, Tensor], z: float, plan: Plan) -> Tensor:
    """x * y + z rounded once, like the fused multiply-add that torch's vectorised 2-D kernel compiles to
    (on every x86 build checked: 1.8.1, 1.12.1, 2.13): exact through float64 for float32 operands."""
    if not plan.fused:
        return x * y + z
    wide = y.double() if isinstance(y, Tensor) else y
    return (x.double() * wide + z).float()
