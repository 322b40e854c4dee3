"""Where two runs of a graph part: every intermediate tensor of one runtime (or precision) against a trusted one's, in
the graph's topological order, each within the cell's tolerance scaled to that tensor's own range. The first node
whose outputs differ beyond it is where the graph goes wrong: every node before it agreed, its inputs included.

A converted graph (fp16, int8) names its tensors as the fp32 graph did, but the converter inserts nodes: a Cast
(fp16) or a QuantizeLinear -> DequantizeLinear pair (int8 QDQ) hands on a tensor of the fp32 graph under a new name.
Such a node's output is compared with the fp32 tensor it carries; QuantizeLinear's own (integer) output is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

import numpy as np

from harness.judge.wire import Node

# Nodes that hand on a value under a new name (a converter's insertions) and may be compared with what they carry.
CARRIERS = ("Cast", "DequantizeLinear", "Identity")
PASSING_ON = CARRIERS + ("QuantizeLinear",)
INT32 = (-(2**31), 2**31 - 1)  # integers beyond it are sentinels (a Slice's "to the end"), which runtimes may narrow


@dataclass(frozen=True)
class TensorDiff:
    """One tensor of one node against its trusted counterpart."""

    max_abs: float
    tolerance: float
    differing: int  # elements beyond the tolerance (shape, NaN or integer mismatches count every element)
    size: int
    note: Optional[str] = None

    @property
    def parts(self) -> bool:
        return self.differing > 0


@dataclass(frozen=True)
class Divergent:
    """The first node that parts, what it was compared with, and how much of the graph was compared at all."""

    node: Optional[Node]
    tensor: str  # the node's output that parts
    trusted_tensor: str  # the trusted graph's tensor it was compared with
    diff: Optional[TensorDiff]
    compared: int  # nodes whose outputs had a trusted counterpart
    nodes: int


def scaled_tolerance(trusted: np.ndarray, atol: float, rtol: float, output_span: float) -> np.ndarray:
    """The cell's tolerance at this tensor: atol scaled by the tensor's magnitude against the outputs' span, plus
    rtol of each element (an atol of 1% of the outputs' range is 1% of this tensor's range too)."""
    finite = np.abs(trusted[np.isfinite(trusted)])
    scale = float(finite.max()) if finite.size else 0.0
    span = output_span if output_span > 0 else 1.0
    return atol * scale / span + rtol * np.abs(trusted)


def tensor_diff(got: np.ndarray, want: np.ndarray, atol: float, rtol: float, output_span: float) -> TensorDiff:
    """How far `got` is from the trusted `want`: integers and booleans must be equal, floats within tolerance."""
    got, want = np.asarray(got), np.asarray(want)
    if [d for d in got.shape if d != 1] == [d for d in want.shape if d != 1]:  # [] or [1]: runtimes spell it either way
        got = got.reshape(want.shape)
    if got.shape != want.shape:
        note = f"shape {list(got.shape)}, trusted {list(want.shape)}"
        return TensorDiff(float("inf"), 0.0, max(got.size, want.size, 1), want.size, note)
    if want.size == 0:
        return TensorDiff(0.0, 0.0, 0, 0)
    if not (np.issubdtype(want.dtype, np.floating) or np.issubdtype(got.dtype, np.floating)):
        if got.dtype != np.bool_ and want.dtype != np.bool_:  # "to the end" (INT64_MAX in a Slice) held as int32
            got, want = (np.clip(x.astype(np.int64), INT32[0], INT32[1]) for x in (got, want))
        unequal = got != want
        delta = np.abs(got.astype(np.float64) - want.astype(np.float64)) if got.dtype != np.bool_ else unequal
        return TensorDiff(float(np.max(delta)), 0.0, int(unequal.sum()), want.size)
    a, b = got.astype(np.float64), want.astype(np.float64)
    same_nan = np.isnan(a) & np.isnan(b)
    same_inf = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
    with np.errstate(invalid="ignore"):
        delta = np.abs(a - b)
        tol = scaled_tolerance(b, atol, rtol, output_span)
        beyond = ~(delta <= tol) & ~same_nan & ~same_inf
    finite = delta[np.isfinite(delta)]
    worst = float(finite.max()) if finite.size else 0.0
    if beyond.any() and not np.isfinite(delta[beyond]).all():
        worst = float("inf")
    return TensorDiff(worst, float(np.max(tol)) if tol.size else 0.0, int(beyond.sum()), want.size)


def counterparts(nodes: Sequence[Node], trusted: Mapping[str, np.ndarray]) -> Dict[str, str]:
    """Each node output of this graph that has a trusted tensor to compare with: the same name, or the fp32 tensor
    a converter's Cast or DequantizeLinear carries on under a new name."""
    producer = {out: node for node in nodes for out in node.outputs}
    found: Dict[str, str] = {}
    for node in nodes:
        for out in node.outputs:
            if out in trusted:
                found[out] = out
            elif node.op_type in CARRIERS and node.inputs:
                carried = _carried(node.inputs[0], producer, trusted)
                if carried is not None:
                    found[out] = carried
    return found


def _carried(name: str, producer: Mapping[str, Node], trusted: Mapping[str, np.ndarray]) -> Optional[str]:
    for _ in range(8):  # a converter inserts a few nodes at most
        if name in trusted:
            return name
        node = producer.get(name)
        if node is None or node.op_type not in PASSING_ON or not node.inputs:
            return None
        name = node.inputs[0]
    return None


def first_divergence(
    nodes: Sequence[Node],
    got: Mapping[str, np.ndarray],
    trusted: Mapping[str, np.ndarray],
    atol: float,
    rtol: float,
    output_span: float,
) -> Divergent:
    """The first node, in the graph's order, one of whose outputs parts from its trusted counterpart."""
    pairs = counterparts(nodes, trusted)
    compared = 0
    for node in nodes:
        mine = [(out, pairs[out]) for out in node.outputs if out in pairs and out in got]
        compared += bool(mine)
        for out, theirs in mine:
            diff = tensor_diff(got[out], trusted[theirs], atol, rtol, output_span)
            if diff.parts:
                return Divergent(node, out, theirs, diff, compared, len(nodes))
    return Divergent(None, "", "", None, compared, len(nodes))


def output_span(outputs: Sequence[np.ndarray]) -> float:
    """The reference outputs' range, peak to peak over the float outputs: what a converted cell's atol is a part of."""
    spans: List[float] = []
    for array in outputs:
        array = np.asarray(array)
        if array.size and np.issubdtype(array.dtype, np.floating):
            finite = array[np.isfinite(array)]
            if finite.size:
                spans.append(float(finite.max() - finite.min()))
    return max(spans, default=0.0)
