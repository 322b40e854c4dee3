"""Routing an unmodified model through a strategy: every module-level name that holds the torch function
(torchvision imports `grid_sample` by name) points at the strategy's operator for the length of a block."""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Dict, Iterator, List, Set, Tuple

from harness.strategies import get_strategy


@contextlib.contextmanager
def patched(strategy: str = "custom", family: str = "grid_sample") -> Iterator[None]:
    """Within this block `torch.nn.functional.grid_sample`, and every module-level alias of it, runs and exports
    through the named strategy.

    >>> with patched("custom"):
    ...     torch.onnx.export(model, args, "model.onnx", opset_version=11)
    """
    from harness.worker.fingerprint import collect

    chosen = get_strategy(family, strategy)
    reason = chosen.unavailable(collect("patched"))
    if reason:
        raise RuntimeError(f"strategy {strategy!r} cannot run here: {reason}")
    with chosen.context():
        yield


@contextlib.contextmanager
def routed(original: Any, replacement: Any) -> Iterator[None]:
    """Replace `original` by `replacement` wherever a loaded module holds it by name, then restore."""
    swapped = _swap(original, replacement)
    try:
        yield
    finally:
        for module, name in swapped:
            setattr(module, name, original)


_FOUND: Dict[int, List[Tuple[Any, str]]] = {}
_SCANNED: Dict[int, Set[str]] = {}


def _swap(original: Any, replacement: Any) -> List[Tuple[Any, str]]:
    """Scan each loaded module once per function (modules imported later are scanned when first seen)."""
    if replacement is original:
        return []
    found = _FOUND.setdefault(id(original), [])
    scanned = _SCANNED.setdefault(id(original), set())
    for mod_name, module in list(sys.modules.items()):
        if mod_name in scanned:
            continue
        scanned.add(mod_name)
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict) or mod_name.startswith("harness."):
            continue
        found.extend((module, name) for name, value in list(namespace.items()) if value is original)
    swapped = []
    for module, name in found:
        if getattr(module, name, None) is original:
            setattr(module, name, replacement)
            swapped.append((module, name))
    return swapped
