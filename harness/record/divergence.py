"""Where a mismatching graph parts from a trusted run of the same graph: the part of a `divergence` record that says
which node first goes wrong (harness diverge). Torch-free and Python 3.8-clean: the runtimes and the page read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Divergence:
    """The first node, in the graph's topological order, whose outputs differ from the trusted run's beyond the
    cell's tolerance scaled to that tensor's range; `node` is None when none was found, and the record's reason
    says why (a runtime that cannot expose its intermediates, a mismatch that does not reproduce)."""

    trusted: str  # the runtime whose run is trusted ("onnxruntime 1.32.0"), on the graph of `trusted_precision`
    trusted_precision: str = "fp32"
    sample: str = ""  # the stored input set both ran on ("export shape")
    node: Optional[str] = None  # its name in this graph
    op_type: Optional[str] = None
    domain: Optional[str] = None  # "" for the ONNX domain, "com.microsoft", ...
    preceding: Optional[int] = None  # how many nodes precede it in the graph's order
    nodes: Optional[int] = None  # the graph's nodes (its main graph's)
    compared: Optional[int] = None  # nodes whose outputs had a trusted counterpart, up to and with the first to part
    tensor: Optional[str] = None  # its output that parts
    trusted_tensor: Optional[str] = None  # the trusted graph's tensor compared with (renamed by a converter)
    carries: Optional[str] = None  # for a converter's Cast or DequantizeLinear: the op type of the node it carries
    max_abs: Optional[float] = None  # the largest difference there
    tolerance: Optional[float] = None  # the largest tolerance there (the cell's, scaled to the tensor's range)
    differing: Optional[int] = None  # elements beyond it
    size: Optional[int] = None
    note: Optional[str] = None  # what the difference is when it is no number (a shape)

    @property
    def where(self) -> str:
        """ "GridSample (node /GridSample, 0 before it)", or "" when no node was found."""
        if self.node is None:
            return ""
        op = self.op_type if not self.domain else f"{self.domain}::{self.op_type}"
        if self.carries:
            op = f"{op} of {self.carries}"
        fused = ", fused with what follows it" if self.note and self.note.startswith("fused") else ""
        return f"{op} (node {self.node}, {self.preceding} before it{fused})"
