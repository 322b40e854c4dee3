"""How the page draws the record's words: verdict styles, pivots, compact parameter labels and sort orders.

The words themselves (verdicts, portability, canonical parameters, versions) belong to harness.record.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Sequence, Tuple

from harness.record import FINGERPRINT_KEYS, Verdict, ladder_key, portability_rank
from harness.record.precisions import PRECISION_NAMES


class VerdictStyle(NamedTuple):
    """How the page draws one verdict: the verdict itself comes from harness.record."""

    verdict: Verdict
    glyph: str
    label: str
    meaning: str

    @property
    def name(self) -> str:
        return self.verdict.value


VERDICT_STYLE: Dict[Verdict, VerdictStyle] = {
    style.verdict: style
    for style in (
        VerdictStyle(Verdict.PASS, "✓", "pass", "exported, ran in the runtime and matched eager PyTorch"),
        VerdictStyle(
            Verdict.MISMATCH, "≠", "mismatch", "ran, but the output differs from eager PyTorch beyond tolerance"
        ),
        VerdictStyle(Verdict.OPSET_DRIFT, "≈", "opset drift", "the exported model's opset is not the one asked for"),
        VerdictStyle(Verdict.EXPORT_FAILED, "E", "export failed", "torch.onnx.export raised"),
        VerdictStyle(Verdict.CHECK_FAILED, "C", "check failed", "onnx.checker rejected the model"),
        VerdictStyle(Verdict.LOAD_FAILED, "L", "load failed", "the runtime could not load the model"),
        VerdictStyle(Verdict.RUN_FAILED, "R", "run failed", "the runtime raised while running the model"),
        VerdictStyle(Verdict.CRASHED, "✕", "crashed", "the worker process died (signal)"),
        VerdictStyle(Verdict.TIMEOUT, "T", "timeout", "the cell ran past its time limit"),
        VerdictStyle(
            Verdict.NOT_APPLICABLE, "–", "not applicable", "the strategy or this torch cannot do this combination"
        ),
        VerdictStyle(
            Verdict.HARNESS_ERROR, "!", "harness error", "a bug of the harness, not a failure of the strategy"
        ),
    )
}
# The legend's order, and the order of "how bad" in summaries: the Verdict enum's own.
VERDICTS: Tuple[VerdictStyle, ...] = tuple(VERDICT_STYLE[v] for v in Verdict if v in VERDICT_STYLE)

# Verdicts that say nothing about the strategy itself: left out of pass rates and flagged instead.
NOT_THE_STRATEGYS_FAULT = frozenset({Verdict.HARNESS_ERROR.value})


# The fingerprint's columns in the environments table.
FINGERPRINT_COLUMNS: Tuple[str, ...] = FINGERPRINT_KEYS

# Column axes the matrix can pivot to; the dimensions not on an axis are shown as chips inside a slot.
PIVOTS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("environment × opset", ("env", "opset")),
    ("environment × exporter", ("env", "exporter")),
    ("environment × device", ("env", "device")),
    ("opset × exporter", ("opset", "exporter")),
    ("exporter × device", ("exporter", "device")),
    ("environment", ("env",)),
    ("environment × runtime", ("env", "runtime")),
    ("runtime × opset", ("runtime", "opset")),
    ("precision × runtime", ("precision", "runtime")),
    ("runtime × precision", ("runtime", "precision")),
    ("environment × precision", ("env", "precision")),
)
CELL_DIMS: Tuple[str, ...] = ("env", "runtime", "opset", "exporter", "shape_mode", "device", "dtype", "precision")
DIM_LABEL: Dict[str, str] = {
    "family": "family",
    "case": "case",
    "strategy": "strategy",
    "env": "environment",
    "runtime": "runtime",
    "opset": "opset",
    "exporter": "exporter",
    "shape_mode": "shape mode",
    "device": "device",
    "dtype": "dtype",
    "precision": "precision",
    "verdict": "verdict",
}


def _abbrev(key: str) -> str:
    words = [w for w in key.split("_") if w]
    return "".join(w[0] for w in words) if len(words) > 1 else key


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "T" if value else "F"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "x".join(_value_text(v) for v in value)
    return str(value)


def params_label(params: Mapping[str, Any], shown: Iterable[str] = ()) -> str:
    """A compact label such as "bilinear/zeros/ac=F": strings bare, other values as abbreviated key=value."""
    keep = set(shown)
    parts = []
    for key, value in params.items():
        if keep and key not in keep:
            continue
        if isinstance(value, str):
            parts.append(value)
        else:
            parts.append(f"{_abbrev(key)}={_value_text(value)}")
    return "/".join(parts) if parts else "—"


def varying_keys(all_params: Sequence[Mapping[str, Any]]) -> List[str]:
    """Parameter keys whose value changes within a case; constant ones are left out of row labels."""
    keys: List[str] = []
    for params in all_params:
        for key in params:
            if key not in keys:
                keys.append(key)
    if len(all_params) < 2:
        return keys
    varying = []
    for key in keys:
        seen = {json.dumps(p.get(key), sort_keys=True, default=str) for p in all_params}
        if len(seen) > 1:
            varying.append(key)
    return varying


# The project's own families first, in the order its docs introduce them; any other family after, by name.
FAMILY_ORDER: Tuple[str, ...] = ("grid_sample", "resize", "layernorm", "gelu", "control_flow")


def family_sort_key(family: str) -> Tuple[int, str]:
    return (FAMILY_ORDER.index(family) if family in FAMILY_ORDER else len(FAMILY_ORDER), family)


def natural_key(text: str) -> Tuple[Any, ...]:
    """ "r=4" before "r=10": digits compare as numbers."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part)


def strategy_sort_key(strategy: str, portability: str, is_reference: bool) -> Tuple[int, int, str]:
    # The family's reference first (as its records name it): every other strategy is read against it.
    return (0 if is_reference else 1, portability_rank(portability), strategy)


# The precisions a graph is judged at: the graph as exported, then the conversions people ship.
PRECISION_ORDER: Tuple[str, ...] = PRECISION_NAMES


def precision_sort_key(precision: str) -> Tuple[int, str]:
    order = PRECISION_ORDER
    return (order.index(precision) if precision in order else len(order), precision)


# How the page names a runtime: its record's name, spelt as its makers spell it; their order on the ladder.
RUNTIME_NAMES: Dict[str, str] = {"onnxruntime": "onnxruntime", "openvino": "OpenVINO"}


def runtime_label(name: str, version: Any) -> str:
    """ "onnxruntime 1.14.1", "OpenVINO 2026.4.1": Runtime.label, as the page spells the runtime's name."""
    shown = RUNTIME_NAMES.get(name, name)
    return f"{shown} {version}" if version else shown


def runtime_sort_key(label: str) -> Tuple[Any, ...]:
    """The runtime ladder (harness.record.ladder_key) for a label as the page spells it."""
    shown, _, version = label.partition(" ")
    name = {v: k for k, v in RUNTIME_NAMES.items()}.get(shown, shown)
    return ladder_key(name, version) + (label,)
