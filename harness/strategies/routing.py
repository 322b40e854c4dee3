"""Routing an unmodified model through strategies: every module-level name that holds a torch function
(torchvision imports `grid_sample` by name) points at the strategy's operator for the length of a block."""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from harness.strategies import Strategy, get_strategy, strategies_for

# The families whose strategies route a torch function that unmodified models call.
ROUTED_FAMILIES = ("grid_sample", "affine_grid")


@contextlib.contextmanager
def patched(strategy: Optional[str] = None, family: Optional[str] = None, **by_family: str) -> Iterator[None]:
    """Within this block the torch functions of the routed families (`F.grid_sample`, `F.affine_grid`, and every
    module-level alias of them) run and export through the named strategies.

    >>> with patched("custom"):  # grid_sample and affine_grid through our rewrites
    ...     torch.onnx.export(model, args, "model.onnx", opset_version=11)
    >>> with patched(grid_sample="mmcv", affine_grid="custom"):  # one strategy per operator
    ...     ...
    >>> with patched("contrib", family="grid_sample"):  # one family only
    ...     ...
    """
    from harness.worker.fingerprint import collect

    env = collect("patched")
    with contextlib.ExitStack() as stack:
        for name, chosen in routes(strategy, family, by_family).items():
            reason = chosen.unavailable(env)
            if reason:
                raise RuntimeError(f"{name} strategy {chosen.name!r} cannot run here: {reason}")
            stack.enter_context(chosen.context())
        yield


def routes(strategy: Optional[str], family: Optional[str], by_family: Dict[str, str]) -> Dict[str, Strategy]:
    """The strategy each routed family takes: a name for every family that has it, then per-family choices."""
    unknown = sorted(set(by_family) - set(ROUTED_FAMILIES)) + (
        [family] if family not in (None, *ROUTED_FAMILIES) else []
    )
    if unknown:
        raise ValueError(f"patched(): {', '.join(unknown)} is not a routed family; use {', '.join(ROUTED_FAMILIES)}")
    chosen: Dict[str, Strategy] = {}
    if family is not None:
        chosen[family] = get_strategy(family, strategy or "custom")
    elif strategy is not None or not by_family:
        name = strategy or "custom"
        found = {f: s for f in ROUTED_FAMILIES for s in strategies_for(f) if s.name == name}
        if not found:
            raise ValueError(f"patched({name!r}): no routed family has a strategy of that name")
        chosen.update(found)
    chosen.update({f: get_strategy(f, name) for f, name in by_family.items()})
    return chosen


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
