"""Exportable operators of our own, and `patched`, which routes an unmodified model through a strategy."""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator, List, Tuple

import torch.nn.functional as F

from harness.ops._grid_sample import grid_sample
from harness.ops._naive import naive_grid_sample

__all__ = ["grid_sample", "naive_grid_sample", "patched", "NATIVE_GRID_SAMPLE"]

NATIVE_GRID_SAMPLE = F.grid_sample


@contextlib.contextmanager
def patched(strategy: str = "custom", family: str = "grid_sample") -> Iterator[None]:
    """Within this block `torch.nn.functional.grid_sample`, and every module-level alias of it (torchvision
    imports it by name), runs and exports through the named strategy.

    >>> with patched("custom"):
    ...     torch.onnx.export(model, args, "model.onnx", opset_version=11)
    """
    from harness.strategies import get_strategy

    chosen = get_strategy(family, strategy)
    reason = chosen.unavailable(None)
    if reason:
        raise RuntimeError(f"strategy {strategy!r} cannot run here: {reason}")
    replacement = chosen.op()
    swapped = _swap(NATIVE_GRID_SAMPLE, replacement)
    try:
        with chosen.context(None):
            yield
    finally:
        for module, name in swapped:
            setattr(module, name, NATIVE_GRID_SAMPLE)


def _swap(original: Any, replacement: Any) -> List[Tuple[Any, str]]:
    swapped = []
    if replacement is original:
        return swapped
    for module in list(sys.modules.values()):
        if module is None or module.__name__.startswith("harness."):
            continue
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            if value is original:
                setattr(module, name, replacement)
                swapped.append((module, name))
    return swapped
