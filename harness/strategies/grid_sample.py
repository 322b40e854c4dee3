"""grid_sample strategies: native, custom (our exact rewrite), naive, mmcv and contrib."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Dict, Optional

from harness.record import EnvInfo, parse_version
from harness.strategies import ORT_CONTRIB, STANDARD, Strategy, register_strategy
from harness.strategies._symbolic import scoped_symbolic

if TYPE_CHECKING:  # cells are what a strategy is asked about, never what it imports
    from harness.plan.spec import CellSpec

FAMILY = "grid_sample"
MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")


def _mode(params: Dict[str, Any]) -> str:
    return params.get("mode", "bilinear")


def _padding(params: Dict[str, Any]) -> str:
    return params.get("padding_mode", "zeros")


def _rank(params: Dict[str, Any]) -> int:
    return int(params.get("rank", 4))


class GridSampleStrategy(Strategy):
    """Within its context, a model calling F.grid_sample itself (unmodified code) runs through op()."""

    family = FAMILY

    def context(self) -> ContextManager[None]:
        from harness.ops import NATIVE_GRID_SAMPLE
        from harness.strategies.routing import routed

        stack = contextlib.ExitStack()
        stack.enter_context(routed(NATIVE_GRID_SAMPLE, self.op()))
        stack.enter_context(self.export_context())
        return stack

    def export_context(self) -> ContextManager[None]:
        return contextlib.nullcontext()


class RewriteStrategy(GridSampleStrategy):
    """grid_sample rewritten in tensor ops: exported with harness.ops.lean_export, which keeps the exporter's time
    near native's (its node-by-node conversion grows with the square of the traced graph)."""

    def export_context(self) -> ContextManager[None]:
        from harness.ops import lean_export

        return lean_export()


@register_strategy
class Native(GridSampleStrategy):
    family = FAMILY
    name = "native"
    portability = STANDARD
    summary = "torch.nn.functional.grid_sample as is; torch's own symbolic (ONNX GridSample, opset 16+)"
    reference = True

    def op(self) -> Callable[..., Any]:
        from harness.ops import NATIVE_GRID_SAMPLE

        return NATIVE_GRID_SAMPLE

    def unsupported(self, cell: CellSpec, env: EnvInfo) -> Optional[str]:
        params = cell.params
        if _rank(params) == 5 and _mode(params) == "bicubic":
            return "PyTorch's grid_sample has no bicubic mode for 5-D input"
        return None


@register_strategy
class Custom(RewriteStrategy):
    family = FAMILY
    name = "custom"
    portability = STANDARD
    summary = "harness.ops.grid_sample: our exact rewrite in standard tensor ops (Gather, Where, arithmetic)"

    def op(self) -> Callable[..., Any]:
        from harness.ops import grid_sample

        return grid_sample

    def unsupported(self, cell: CellSpec, env: EnvInfo) -> Optional[str]:
        params = cell.params
        if _rank(params) == 5 and _mode(params) == "bicubic":
            return "bicubic is defined for 4-D input only (as in PyTorch)"
        return None


@register_strategy
class Naive(RewriteStrategy):
    family = FAMILY
    name = "naive"
    portability = STANDARD
    summary = "the clamped-index bilinear rewrite as commonly published: exact inside, border padding at the edges"

    def op(self) -> Callable[..., Any]:
        from harness.ops import naive_grid_sample

        return naive_grid_sample

    def unsupported(self, cell: CellSpec, env: EnvInfo) -> Optional[str]:
        params = cell.params
        if _mode(params) != "bilinear" or _rank(params) != 4:
            return "the naive rewrite covers bilinear 4-D only"
        return None


@register_strategy
class Mmcv(RewriteStrategy):
    family = FAMILY
    name = "mmcv"
    portability = STANDARD
    needs = ("mmcv",)
    summary = "mmcv.ops.point_sample.bilinear_grid_sample (pads the input, four gathers)"

    def unavailable(self, env: EnvInfo) -> Optional[str]:
        blocked = os.environ.get("HARNESS_MMCV_UNAVAILABLE")
        if blocked:
            return blocked
        try:
            from mmcv.ops.point_sample import bilinear_grid_sample  # noqa: F401
        except Exception as exc:  # ImportError, or the compiled extension failing to load
            return f"mmcv's bilinear_grid_sample does not import here: {type(exc).__name__}: {exc}"[:300]
        return None

    def op(self) -> Callable[..., Any]:
        from mmcv.ops.point_sample import bilinear_grid_sample

        def mmcv_grid_sample(
            input: Any,
            grid: Any,
            mode: str = "bilinear",
            padding_mode: str = "zeros",
            align_corners: Optional[bool] = None,
        ) -> Any:
            if mode != "bilinear" or padding_mode != "zeros" or input.dim() != 4:
                raise ValueError(
                    f"mmcv's bilinear_grid_sample supports bilinear/zeros 4-D only, not "
                    f"{mode}/{padding_mode} {input.dim()}-D"
                )
            return bilinear_grid_sample(input, grid, align_corners=bool(align_corners))

        return mmcv_grid_sample

    def unsupported(self, cell: CellSpec, env: EnvInfo) -> Optional[str]:
        params = cell.params
        if _mode(params) != "bilinear" or _padding(params) != "zeros" or _rank(params) != 4:
            return "mmcv's bilinear_grid_sample supports bilinear mode, zeros padding and 4-D input only"
        return None


@register_strategy
class Contrib(GridSampleStrategy):
    family = FAMILY
    name = "contrib"
    portability = ORT_CONTRIB
    summary = (
        "a custom symbolic mapping aten::grid_sampler to com.microsoft::GridSample on every torch "
        "version (it overrides torch's own opset-16 symbolic); runs only in onnxruntime >= 1.9"
    )

    def unavailable(self, env: EnvInfo) -> Optional[str]:
        ort = env.onnxruntime
        if ort is None:
            return "onnxruntime is not installed"
        if parse_version(ort) < (1, 9):
            return f"com.microsoft::GridSample needs onnxruntime >= 1.9; this environment has {ort}"
        return None

    def op(self) -> Callable[..., Any]:
        from harness.ops import NATIVE_GRID_SAMPLE

        return NATIVE_GRID_SAMPLE

    def unsupported(self, cell: CellSpec, env: EnvInfo) -> Optional[str]:
        params = cell.params
        if cell.exporter != "torchscript":
            return "custom symbolics apply to the TorchScript exporter only"
        if _rank(params) != 4:
            return "the contrib symbolic emits 4-D com.microsoft::GridSample only"
        return None

    def export_context(self) -> ContextManager[None]:
        return scoped_symbolic("grid_sampler", _contrib_grid_sampler)


def _contrib_grid_sampler(g, input, grid, mode, padding_mode, align_corners):  # no hints: torch 1.12 reads them
    from torch.onnx import symbolic_helper

    mode_i = symbolic_helper._get_const(mode, "i", "mode")
    padding_i = symbolic_helper._get_const(padding_mode, "i", "padding_mode")
    align_b = symbolic_helper._get_const(align_corners, "b", "align_corners")
    return g.op(
        "com.microsoft::GridSample",
        input,
        grid,
        mode_s=MODES[mode_i],
        padding_mode_s=PADDINGS[padding_i],
        align_corners_i=int(align_b),
    )
