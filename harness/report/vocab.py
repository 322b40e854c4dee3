"""The report's fixed vocabulary: verdicts, portability labels, compact parameter labels and sort orders."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Sequence, Tuple


class VerdictStyle(NamedTuple):
    name: str
    glyph: str
    label: str
    meaning: str


# Order matters: it is the legend's order and the order of "how bad" in summaries.
VERDICTS: Tuple[VerdictStyle, ...] = (
    VerdictStyle("pass", "✓", "pass", "exported, ran in onnxruntime and matched eager PyTorch"),
    VerdictStyle("mismatch", "≠", "mismatch", "ran, but the output differs from eager PyTorch beyond tolerance"),
    VerdictStyle("opset_drift", "≈", "opset drift", "the exported model's opset is not the one asked for"),
    VerdictStyle("export_failed", "E", "export failed", "torch.onnx.export raised"),
    VerdictStyle("check_failed", "C", "check failed", "onnx.checker rejected the model"),
    VerdictStyle("load_failed", "L", "load failed", "onnxruntime could not load the model"),
    VerdictStyle("run_failed", "R", "run failed", "onnxruntime raised while running the model"),
    VerdictStyle("crashed", "✕", "crashed", "the worker process died (signal)"),
    VerdictStyle("timeout", "T", "timeout", "the cell ran past its time limit"),
    VerdictStyle("not_applicable", "–", "not applicable", "the strategy or this torch cannot do this combination"),
    VerdictStyle("harness_error", "!", "harness error", "a bug of the harness, not a failure of the strategy"),
)
VERDICT_NAMES: Tuple[str, ...] = tuple(v.name for v in VERDICTS)
VERDICT_BY_NAME: Dict[str, VerdictStyle] = {v.name: v for v in VERDICTS}

# Verdicts that say nothing about the strategy itself: left out of pass rates and flagged instead.
NOT_THE_STRATEGYS_FAULT = frozenset({"harness_error"})

PORTABILITY_RANK: Dict[str, int] = {"standard": 0, "ort_contrib": 1, "custom_domain": 2}
PORTABILITY_LABEL: Dict[str, str] = {
    "standard": "standard ONNX",
    "ort_contrib": "onnxruntime contrib op (runs only in onnxruntime)",
    "custom_domain": "custom domain",
}
PORTABILITY_SHORT: Dict[str, str] = {"standard": "standard", "ort_contrib": "ORT contrib", "custom_domain": "custom"}

# Column axes the matrix can pivot to; the dimensions not on an axis are shown as chips inside a slot.
PIVOTS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("environment × opset", ("env", "opset")),
    ("environment × exporter", ("env", "exporter")),
    ("environment × device", ("env", "device")),
    ("opset × exporter", ("opset", "exporter")),
    ("exporter × device", ("exporter", "device")),
    ("environment", ("env",)),
)
CELL_DIMS: Tuple[str, ...] = ("env", "opset", "exporter", "shape_mode", "device", "dtype")
DIM_LABEL: Dict[str, str] = {
    "family": "family",
    "case": "case",
    "strategy": "strategy",
    "env": "environment",
    "opset": "opset",
    "exporter": "exporter",
    "shape_mode": "shape mode",
    "device": "device",
    "dtype": "dtype",
    "verdict": "verdict",
}


def portability_rank(portability: str) -> int:
    return PORTABILITY_RANK.get(portability, len(PORTABILITY_RANK))


def portability_label(portability: str) -> str:
    return PORTABILITY_LABEL.get(portability, f"unknown portability ({portability})")


def verdict_rank(verdict: str) -> int:
    return VERDICT_NAMES.index(verdict) if verdict in VERDICT_NAMES else len(VERDICT_NAMES)


def params_key(params: Mapping[str, Any]) -> str:
    """The canonical text of a case's parameters: the identity used for joins and de-duplication."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)


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


_VERSION_PART = re.compile(r"\d+")


def version_tuple(text: Any) -> Tuple[int, ...]:
    """Numeric parts of a version such as "2.13.0+cpu" -> (2, 13, 0); empty when unknown."""
    if not isinstance(text, str):
        return ()
    head = text.split("+")[0]
    return tuple(int(p) for p in _VERSION_PART.findall(head)[:4])


# The project's own families first, in the order its docs introduce them; any other family after, by name.
FAMILY_ORDER: Tuple[str, ...] = ("grid_sample", "resize", "layernorm", "gelu", "control_flow")


def family_sort_key(family: str) -> Tuple[int, str]:
    return (FAMILY_ORDER.index(family) if family in FAMILY_ORDER else len(FAMILY_ORDER), family)


def natural_key(text: str) -> Tuple[Any, ...]:
    """ "r=4" before "r=10": digits compare as numbers."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part)


def strategy_sort_key(strategy: str, portability: str) -> Tuple[int, int, str]:
    # The family's own operator first: every other strategy is read against it.
    return (0 if strategy == "native" else 1, portability_rank(portability), strategy)
