"""resize strategies: native F.interpolate (ONNX Resize, whose semantics changed at opset 11) and `separable`,
our rewrite as two interpolation matrices (out = Mh @ x @ Mw^T) that means the same at every opset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Sequence, Tuple

from harness.record import EnvInfo, parse_version
from harness.strategies import STANDARD, Strategy, register_strategy

if TYPE_CHECKING:  # cells are what a strategy is asked about, never what it imports
    from harness.plan.spec import CellSpec

FAMILY = "resize"
SEPARABLE_MODES = ("nearest", "nearest-exact", "bilinear", "bicubic")
CUBIC_A = -0.75  # PyTorch's bicubic coefficient (Keys' kernel), as ONNX Resize's cubic_coeff_a default


@register_strategy
class Native(Strategy):
    family = FAMILY
    name = "native"
    portability = STANDARD
    summary = "torch.nn.functional.interpolate as is; torch's own symbolic (ONNX Resize, Upsample before opset 10)"
    reference = True

    def op(self) -> Callable[..., Any]:
        import torch.nn.functional as F

        return F.interpolate

    def unsupported(self, cell: CellSpec, env: EnvInfo) -> Optional[str]:
        params = cell.params
        return _nearest_exact_missing(params, env)


@register_strategy
class Separable(Strategy):
    family = FAMILY
    name = "separable"
    portability = STANDARD
    summary = (
        "our rewrite: per-axis interpolation matrices built from the shapes with arange, floor and compare, "
        "applied by two MatMuls; no Resize node, so its meaning cannot change with the opset"
    )

    def op(self) -> Callable[..., Any]:
        return interpolate

    def unsupported(self, cell: CellSpec, env: EnvInfo) -> Optional[str]:
        params = cell.params
        if params.get("mode", "nearest") not in SEPARABLE_MODES:
            return f"the separable rewrite covers {', '.join(SEPARABLE_MODES)} on 4-D input only"
        return _nearest_exact_missing(params, env)


def _nearest_exact_missing(params: Dict[str, Any], env: Any) -> Optional[str]:
    """No reference without PyTorch's own mode: the whole row is not applicable there."""
    if params.get("mode") != "nearest-exact":
        return None

    version = env.torch
    if parse_version(version) < (1, 11):
        return f"mode='nearest-exact' came with torch 1.11; torch {version} has no such mode to compare against"
    return None


def interpolate(
    input: Any,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: Optional[bool] = None,
) -> Any:
    """F.interpolate for 4-D input in nearest[-exact], bilinear and bicubic mode, from MatMul and elementwise ops.

    Follows ATen's CPU kernels: the source index of each output pixel, the clamped taps and their weights
    (linear, or Keys' cubic with A=-0.75), one matrix per axis. A given scale_factor sets the coordinate
    mapping (1/scale) as in PyTorch without recompute_scale_factor, not the rounded output size.
    """
    if input.dim() != 4 or mode not in SEPARABLE_MODES:
        raise ValueError(f"separable interpolate covers 4-D {'/'.join(SEPARABLE_MODES)}, not {input.dim()}-D {mode}")
    if mode.startswith("nearest") and align_corners is not None:
        raise ValueError("align_corners applies to bilinear and bicubic only")
    in_sizes = (input.shape[2], input.shape[3])
    out_sizes, scales = _output_sizes(in_sizes, size, scale_factor)
    mats = [
        _axis_matrix(i, o, s, mode, bool(align_corners), input.dtype, input.device)
        for i, o, s in zip(in_sizes, out_sizes, scales)
    ]
    return mats[0].matmul(input).matmul(mats[1].t())


def _pair(value: Any) -> Tuple[Any, Any]:
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"expected one value per spatial axis (2), got {value!r}")
        return value[0], value[1]
    return value, value


def _output_sizes(in_sizes: Sequence[Any], size: Any, scale_factor: Any) -> Tuple[Tuple[Any, ...], Tuple[Any, ...]]:
    if (size is None) == (scale_factor is None):
        raise ValueError("give exactly one of size and scale_factor")
    if size is not None:
        return _pair(size), (None, None)
    import math

    import torch

    scales = _pair(scale_factor)
    outs = []
    for n, s in zip(in_sizes, scales):
        if isinstance(n, torch.Tensor):
            # traced: stay in tensors (dynamic), in float64 as PyTorch computes it; the cast to int64 floors
            # a positive size (onnxruntime before 1.13 has no float64 Floor kernel)
            outs.append((n.to(torch.float64) * float(s)).long())
        else:
            outs.append(int(math.floor(n * float(s))))
    return tuple(outs), tuple(float(s) for s in scales)


def _axis_matrix(
    in_size: Any, out_size: Any, scale_factor: Optional[float], mode: str, align_corners: bool, dtype: Any, device: Any
) -> Any:
    """The (out_size, in_size) matrix whose rows hold each output pixel's tap weights along one axis.

    Index arithmetic stays in float32 (exact for any realistic size) and becomes int64 only for the
    compare: integer Min/Max/Clip do not exist before opset 12.
    """
    import torch

    dst = torch.arange(out_size, device=device).to(torch.float32)
    taps = torch.arange(in_size, device=device).view(1, -1)
    in_f, out_f = _as_float(in_size), _as_float(out_size)
    last = in_f - 1
    if align_corners and not mode.startswith("nearest"):
        src = dst * ((in_f - 1) / _at_least_one(out_f - 1))
    else:
        scale = 1.0 / scale_factor if scale_factor else in_f / out_f
        if mode.startswith("nearest"):
            src = (dst + 0.5) * scale if mode == "nearest-exact" else dst * scale
            return _one_hot(_clamp(torch.floor(src), last), taps, dtype)
        src = (dst + 0.5) * scale - 0.5
        if mode == "bilinear":
            src = torch.clamp(src, min=0.0)
    base = torch.floor(src)
    if mode == "bilinear":
        i0 = _clamp(base, last)
        lam = torch.clamp(src - i0, 0.0, 1.0).view(-1, 1).to(dtype)
        return _one_hot(i0, taps, dtype) * (1 - lam) + _one_hot(_clamp(i0 + 1, last), taps, dtype) * lam
    matrix = None
    for k, w in enumerate(_cubic_weights(src - base)):
        term = _one_hot(_clamp(base + (k - 1), last), taps, dtype) * w.view(-1, 1).to(dtype)
        matrix = term if matrix is None else matrix + term
    return matrix


def _cubic_weights(t: Any) -> Tuple[Any, Any, Any, Any]:
    a = CUBIC_A

    def near(x: Any) -> Any:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Any) -> Any:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _as_float(size: Any) -> Any:
    """A size as float32: under tracing it is a 0-d int64 tensor (the graph stays dynamic), else an int."""
    import torch

    return size.to(torch.float32) if isinstance(size, torch.Tensor) else float(size)


def _at_least_one(value: Any) -> Any:
    import torch

    return torch.clamp(value, min=1.0) if isinstance(value, torch.Tensor) else max(value, 1.0)


def _clamp(index: Any, last: Any) -> Any:
    """A float index held to [0, last]."""
    import torch

    index = torch.clamp(index, min=0.0)
    if isinstance(last, torch.Tensor):
        return torch.min(index, last)
    return torch.clamp(index, max=last)


def _one_hot(index: Any, taps: Any, dtype: Any) -> Any:
    return (index.long().view(-1, 1) == taps).to(dtype)
