"""affine_grid strategies: native (F.affine_grid, which torch exports only from opset 20) and custom (our rewrite
in standard ops). A spatial transformer calls affine_grid before grid_sample: both must export."""

from __future__ import annotations

from typing import Any, Callable, ContextManager

from harness.strategies import STANDARD, Strategy, register_strategy

FAMILY = "affine_grid"


class AffineGridStrategy(Strategy):
    """Within its context, a model calling F.affine_grid itself (unmodified code) runs through op()."""

    family = FAMILY

    def context(self) -> ContextManager[None]:
        from harness.ops import NATIVE_AFFINE_GRID
        from harness.strategies.routing import routed

        return routed(NATIVE_AFFINE_GRID, self.op())


@register_strategy
class Native(AffineGridStrategy):
    name = "native"
    portability = STANDARD
    summary = "torch.nn.functional.affine_grid as is: torch exports aten::affine_grid_generator only from opset 20"
    reference = True

    def op(self) -> Callable[..., Any]:
        from harness.ops import NATIVE_AFFINE_GRID

        return NATIVE_AFFINE_GRID


@register_strategy
class Custom(AffineGridStrategy):
    name = "custom"
    portability = STANDARD
    summary = "harness.ops.affine_grid: the base grid from arange and one batched MatMul, exact, any opset"

    def op(self) -> Callable[..., Any]:
        from harness.ops import affine_grid

        return affine_grid
