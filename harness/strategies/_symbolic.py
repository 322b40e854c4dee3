"""Custom ONNX symbolics registered for one export only, so no other cell sees them."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, Iterator

FROM_OPSET = 7


@contextlib.contextmanager
def scoped_symbolic(aten_name: str, fn: Callable[..., Any], from_opset: int = FROM_OPSET) -> Iterator[None]:
    """Register a custom symbolic for `::aten_name` during this block only, restoring torch's own after.

    torch >= 1.13 keeps custom symbolics apart, but dispatches to the highest registered opset not above
    the target, built-in or custom: one registered at 7 loses to a built-in at 9, so register at every opset.
    Older torch writes custom symbolics into the built-in table: what they shadow is saved and put back.
    """
    import torch

    from harness.worker.fingerprint import max_opset

    try:
        from torch.onnx import symbolic_registry
    except ImportError:
        symbolic_registry = None
    versions = range(from_opset, max_opset() + 1)
    saved: Dict[Any, Any] = {}
    if symbolic_registry is None:
        for version in versions:
            torch.onnx.register_custom_op_symbolic("::" + aten_name, fn, version)
    else:
        for version in versions:
            if not symbolic_registry.is_registered_version("", version):
                symbolic_registry.register_version("", version)
        saved = {key: ops.get(aten_name) for key, ops in symbolic_registry._registry.items() if key[0] == ""}
        torch.onnx.register_custom_op_symbolic("::" + aten_name, fn, from_opset)
    try:
        yield
    finally:
        if symbolic_registry is None:
            for version in versions:
                torch.onnx.unregister_custom_op_symbolic("::" + aten_name, version)
        else:
            for key, ops in symbolic_registry._registry.items():
                if key[0] != "" or ops.get(aten_name) is not fn:
                    continue
                if saved.get(key) is None:
                    del ops[aten_name]
                else:
                    ops[aten_name] = saved[key]
