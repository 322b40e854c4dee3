"""Exportable operators of our own: drop-ins for torch functions, built from standard ONNX-exportable ops.

`harness.ops.patched` (routing an unmodified model through a strategy) is the strategies' own: it is
re-exported here under its contract name, imported on first use so this package never needs the strategies.
"""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F

from harness.ops._affine_grid import affine_grid
from harness.ops._grid_sample import grid_sample
from harness.ops._lean_export import lean_export
from harness.ops._naive import naive_grid_sample

__all__ = [
    "affine_grid",
    "grid_sample",
    "lean_export",
    "naive_grid_sample",
    "patched",
    "NATIVE_GRID_SAMPLE",
    "NATIVE_AFFINE_GRID",
]

NATIVE_GRID_SAMPLE = F.grid_sample
NATIVE_AFFINE_GRID = F.affine_grid


def __getattr__(name: str) -> Any:
    if name == "patched":
        from harness.strategies.routing import patched

        return patched
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
