"""What one grid_sample call does, fixed before any tensor work: mode, padding, layout, index type, and whether
it runs eagerly, under autograd, or inside an export (tracing, dynamo, torch.compile)."""

from __future__ import annotations

import importlib
import warnings
from typing import Optional

import torch
from torch import Tensor

ROWS_MIN_CHANNELS = 64  # exported graphs: from this many channels up, row gathers match GatherElements
EAGER_ROWS_MIN_CHANNELS: Optional[int] = 32  # eager: embedding_bag over rows from this many channels
PAD = {"bilinear": 2, "nearest": 1, "bicubic": 1}  # zero frame each mode's clamped taps need


class Plan:
    """What one call does, fixed before any tensor work."""

    def __init__(self, mode: str, padding: str, align: bool, input: Tensor, grid: Tensor) -> None:
        self.mode, self.padding, self.align = mode, padding, align
        self.volumetric = input.dim() == 5
        self.pad = PAD[mode]
        self.opset = _onnx_opset()
        self.exporting = tracing() or exporting()
        watched = torch.is_grad_enabled() and (input.requires_grad or grid.requires_grad)
        # a graph nobody differentiates (an ONNX export; torch.compile without autograd): cheaper ops where
        # neither torch's gradient rule at the bounds nor the last bit can matter
        self.lean = self.exporting and not watched
        # see _fma; lean graphs emulate it only where a pick depends on it (nearest): for the interpolating
        # modes it moves results by an ulp and costs onnxruntime four float64 passes per axis
        self.fused = not self.volumetric and input.dtype == torch.float32 and (not self.lean or mode == "nearest")
        self.inplace = not (watched or self.exporting)  # may update large temporaries in place
        self.layout = _layout(_static_channels(input), self.exporting, self.opset, mode)
        # int32 indices halve onnxruntime's index traffic (eager torch widens them first, so gains nothing);
        # torch.gather takes them from 2.x, index_select always; a rows index spans the batch, which would
        # overflow only past 2**31 framed pixels of the whole batch
        narrow = self.exporting and (self.layout == "rows" or _INT32_GATHER)
        self.index_dtype = torch.int32 if narrow else torch.int64


def resolve_align_corners(align_corners: Optional[bool]) -> bool:
    """torch's default and its warning, for grid_sample and affine_grid alike; the warning names the caller's line."""
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
            "Please specify align_corners=True if the old behavior is desired. See the documentation of "
            "grid_sample for details.",
            stacklevel=3,
        )
        return False
    return bool(align_corners)


# Export context ---------------------------------------------------------------------------------------


def tracing() -> bool:
    return bool(torch.jit.is_tracing())


def exporting() -> bool:
    """Inside torch.export / the dynamo exporter, where in-place tricks buy nothing."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and getattr(compiler, "is_compiling", None) and compiler.is_compiling():
        return True
    return bool(torch.onnx.is_in_onnx_export())


def _onnx_opset() -> Optional[int]:
    """The opset of a running TorchScript ONNX export; None in eager mode, scripting-free tracing, dynamo."""
    if not tracing() or not torch.onnx.is_in_onnx_export():
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
    if not tracing():
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
