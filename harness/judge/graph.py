"""What an ONNX graph holds, read back from its bytes (onnx only, no torch): the exporting cells and the converter
both describe the graphs they make with it."""

from __future__ import annotations

import collections
from typing import Any, Dict


def describe_model(blob: bytes) -> Dict[str, Any]:
    """Actual opset, node count, op types and domains of an exported model."""
    import onnx

    model = onnx.load_model_from_string(blob)
    opset = None
    domains = []
    for imp in model.opset_import:
        domains.append(imp.domain or "")
        if imp.domain in ("", "ai.onnx"):
            opset = int(imp.version)
    ops: Dict[str, int] = collections.Counter()
    for node in _all_nodes(model.graph):
        key = node.op_type if not node.domain or node.domain == "ai.onnx" else f"{node.domain}::{node.op_type}"
        ops[key] += 1
    return {
        "actual_opset": opset,
        "nodes": sum(ops.values()),
        "op_types": dict(sorted(ops.items())),
        "domains": sorted(set(domains)),
        "bytes": len(blob),
    }


def _all_nodes(graph: Any) -> Any:
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.g is not None and len(attr.g.node):
                yield from _all_nodes(attr.g)
            for sub in attr.graphs:
                yield from _all_nodes(sub)
