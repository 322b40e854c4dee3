"""A faster TorchScript export of a model rewritten in tensor ops: identical constants pooled, common subexpressions
and dead nodes removed, right after the exporter lowers tuples and before it converts the graph node by node.

Why: the exporter's node-by-node conversion (`torch._C._jit_pass_onnx`) passes the map of every value converted so
far to each Python symbolic it calls, so each call costs time in proportion to the graph so far and the conversion
grows with the square of the node count (benchmarks/profile_export.py measures it). A rewrite traces to many
nodes, most of them repeated scalar constants: RAFT small through `harness.ops.grid_sample` traces to about 5000
nodes, 1200 once pooled. The exported graph computes the same; it has fewer Constant nodes.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator


@contextlib.contextmanager
def lean_export() -> Iterator[None]:
    """Within this block, torch.onnx.export (TorchScript) pools constants and removes repeated and dead nodes first.

    >>> with lean_export():
    ...     torch.onnx.export(model, args, "model.onnx", opset_version=16)
    """
    import torch

    jit = torch._C
    original = jit._jit_pass_lower_all_tuples

    def lowered(graph: Any) -> None:
        original(graph)
        jit._jit_pass_constant_pooling(graph)
        jit._jit_pass_cse(graph)
        jit._jit_pass_dce(graph)

    jit._jit_pass_lower_all_tuples = lowered
    try:
        yield
    finally:
        jit._jit_pass_lower_all_tuples = original
