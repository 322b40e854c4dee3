"""The other operator that blocks an export: a model other people wrote calls more than the family's operator, and
when the exporter refuses one of those (RAFT's bilinear upsampling with align_corners=True at opset 9, kornia's
matrix inverse), no grid_sample strategy helps. The advice names that operator, so the user learns what to handle.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from harness.record import Verdict

# The families whose strategies route a torch function inside models other people wrote: there, an export can fail on
# an operator no strategy of the family touches. (In the other families the failing operator is the family's own.)
ROUTED_FAMILIES = frozenset({"grid_sample", "affine_grid"})
# The aten operators the routed families' strategies handle themselves: not a second operator.
ROUTED_ATEN = frozenset({"grid_sampler", "grid_sample", "affine_grid_generator", "affine_grid"})

# What an operator becomes in ONNX and how to get past it, for those the built-in models meet.
HINTS: Dict[str, str] = {
    "upsample_bilinear2d": "ONNX Resize, whose align_corners=True mode (coordinate_transformation_mode "
    "align_corners) exists from opset 11: export at opset 11 or above, or upsample with align_corners=False",
    "upsample_nearest2d": "ONNX Resize (Upsample before opset 10)",
    "linalg_inv": "a matrix inverse (torch.inverse), which ONNX has no operator for: compute it in closed form "
    "(kornia 0.9 does for 3x3) or outside the graph",
    "inverse": "a matrix inverse, which ONNX has no operator for: compute it in closed form or outside the graph",
}

_PATTERNS = (
    re.compile(r"Exporting the operator '?(?:[A-Za-z_]*::)?([A-Za-z0-9_]+)'? to ONNX opset version (\d+)"),
    re.compile(r"ONNX export of operator ([A-Za-z0-9_]+)((?:, [^.]*?)?)(?:\.|$)"),
)


def blocking_operator(reason: Optional[str]) -> Optional[str]:
    """The operator an export failure names, with the condition it gives ("upsample_bilinear2d, align_corners ==
    True"), when that is not one the strategies route; else None."""
    for pattern in _PATTERNS:
        found = pattern.search(str(reason or ""))
        if found:
            name = found.group(1)
            if name in ROUTED_ATEN:
                return None
            condition = found.group(2).strip(", ") if pattern is _PATTERNS[1] else ""
            return f"{name}, {condition}" if condition else name
    return None


def blocking_operators(rows: Sequence[Any]) -> Tuple[str, ...]:
    """One sentence per (case, operator) of a group: which strategies that operator stopped, and how to handle it."""
    stopped: Dict[Tuple[str, str], List[str]] = {}
    tried: Dict[str, set] = {}
    for row in rows:
        if row.verdict == Verdict.NOT_APPLICABLE.value or str(row.family) not in ROUTED_FAMILIES:
            continue
        tried.setdefault(str(row.case), set()).add(str(row.strategy))
        operator = blocking_operator(row.reason) if row.verdict == Verdict.EXPORT_FAILED.value else None
        if operator:
            stopped.setdefault((str(row.case), operator), []).append(str(row.strategy))
    said = []
    for (case, operator), strategies in sorted(stopped.items()):
        names = sorted(set(strategies))
        who = "every strategy tried" if set(names) >= tried[case] else ", ".join(names)
        opset = next(int(r.opset) for r in rows if str(r.case) == case)
        hint = HINTS.get(operator.split(",")[0])
        said.append(
            f"{case}: {operator} blocks the export for {who} at opset {opset}, not {rows[0].family}: handle that "
            f"operator" + (f" ({hint})" if hint else "")
        )
    return tuple(said)
