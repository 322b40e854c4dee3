"""The merged records as one flat pandas table (one row per cell), and JSON made safe to inline in the page."""

from __future__ import annotations

import json
import math
from typing import Any, Dict, Optional, Sequence

import pandas as pd

from harness.record import WORKING_SET, CellRecord, RecordKind, Verdict
from harness.report.vocab import runtime_label

# What a cell measures: eager PyTorch, its graph in ORT, the reference eager; and, under `rt`, its graph in the
# runtime that judged it (the "ort" target for onnxruntime, the "openvino" target of an OpenVINO replay).
TARGETS = ("eager", "ort", "reference", "rt")
RUNTIME_TARGET = {"openvino": "openvino"}  # the record's target for a runtime's measurement; "ort" otherwise
FP32 = "fp32"  # the exported graph as is; other precisions are graphs converted from it
# The records of conversions (kind `conversion`) that failed or did not apply: no runtime judged them, so the page
# names their runtime CONVERTER. A conversion that made its graph leaves the verdict to the replays that judge it.
EXPORT, REPLAY, CONVERSION = RecordKind.EXPORT.value, RecordKind.REPLAY.value, RecordKind.CONVERSION.value
SEARCH = RecordKind.SEARCH.value  # a recipe search's answer: made by the converter, like a conversion
MADE_BY_CONVERTER = (CONVERSION, SEARCH)
CONVERTER = "converter"
PARITY = ("max_abs", "max_rel", "atol", "rtol", "min_passing_atol", "mean_abs", "p99_abs", "psnr")
# lat: median seconds; mem: footprint bytes; ws: working-set bytes (harness.record.Peak)
NUMERIC = PARITY + tuple(prefix + "_" + target for target in TARGETS for prefix in ("lat", "mem", "ws"))
COLUMNS = (
    "idx",
    "env",
    "family",
    "case",
    "params",
    "strategy",
    "operators",
    "reference",
    "portability",
    "opset",
    "actual_opset",
    "exporter",
    "shape_mode",
    "device",
    "dtype",
    "runtime",
    "runtime_name",
    "runtime_env",
    "kind",
    "home",
    "own",
    "precision",
    "converter",
    "verdict",
    "reason",
    "failed_stage",
    "exported",
    "error_type",
    "message",
    "max_abs",
    "max_rel",
    "atol",
    "rtol",
    "min_passing_atol",
    "mean_abs",
    "p99_abs",
    "psnr",
    "lat_eager",
    "mem_eager",
    "lat_ort",
    "mem_ort",
    "lat_reference",
    "mem_reference",
    "lat_rt",
    "mem_rt",
    "ws_eager",
    "ws_ort",
    "ws_reference",
    "ws_rt",
    "finished_at",
    "run_id",
)


def number(value: Any) -> Optional[float]:
    """A float for the table, None for what is not a number (a file may hold anything where a number belongs)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def operators_text(record: CellRecord) -> str:
    """The strategies of the model's other operators, "affine_grid=custom"; empty for a one-operator case."""
    return ",".join(f"{family}={name}" for family, name in sorted(record.operators.items()) if family != record.family)


def made_its_graph(record: CellRecord) -> bool:
    """A conversion that made its graph, or a search that found its recipe: no verdict of its own (the replays
    judge that graph on the ladder; the recipes table shows the search)."""
    return record.kind in MADE_BY_CONVERTER and record.verdict == Verdict.PASS


def home_runtime(record: CellRecord) -> str:
    """The exporting environment's own runtime: the one an exporting record was judged by, a replay's origin's."""
    if record.kind == EXPORT:
        return runtime_label(record.runtime.name, record.runtime.version)
    return runtime_label("onnxruntime", record.fingerprint.onnxruntime)


def runtime_of(record: CellRecord) -> str:
    """The runtime that judged the record's graph, as the page names it; CONVERTER for a conversion that failed."""
    if record.kind in MADE_BY_CONVERTER:
        return CONVERTER
    return runtime_label(record.runtime.name, record.runtime.version)


def flat_row(index: int, record: CellRecord) -> Dict[str, Any]:
    failed = record.failed_stage()
    label = runtime_of(record)
    row: Dict[str, Any] = {
        "idx": index,
        "env": record.env,
        "family": record.family,
        "case": record.case,
        "params": record.params_key,
        "strategy": record.strategy,
        "operators": operators_text(record),
        "reference": record.reference,
        "portability": record.portability or "unknown",
        "opset": record.opset,
        "actual_opset": record.actual_opset,
        "exporter": record.exporter,
        "shape_mode": record.shape_mode,
        "device": record.device,
        "dtype": record.dtype,
        "runtime": label,
        "runtime_name": record.runtime.name,
        "runtime_env": record.runtime.env or "",
        "kind": record.kind,
        "home": home_runtime(record),
        # an exporting record, or a replay of its very graph in the same runtime (which the replay command never
        # runs); a converted graph (fp16, int8) judged there is a replay like any other
        "own": record.kind == EXPORT or (label == home_runtime(record) and record.precision == FP32),
        "precision": record.precision,
        "converter": record.converter,
        "verdict": record.verdict.value,
        "reason": record.reason,
        "failed_stage": failed.name if failed else None,
        "exported": record.export is not None,  # a graph came out of the exporter (stored for replays, if kept)
        "error_type": failed.error_type if failed else None,
        "message": failed.message if failed else None,
    }
    for key in PARITY:
        row[key] = number(getattr(record.parity, key)) if record.parity else None
    for target in TARGETS:
        measured = RUNTIME_TARGET.get(record.runtime.name, "ort") if target == "rt" else target
        timing, peak = record.latency.get(measured), record.memory.get(measured)
        row["lat_" + target] = number(timing.median_s) if timing else None
        row["mem_" + target] = number(peak.peak_bytes) if peak else None
        working = record.memory.get(measured + WORKING_SET)
        row["ws_" + target] = number(working.peak_bytes) if working else None
    row.update({"finished_at": record.finished_at, "run_id": record.run_id})
    return row


def build_frame(records: Sequence[CellRecord]) -> pd.DataFrame:
    """Columns every view uses; `idx` points back into `records` for the details."""
    frame = pd.DataFrame([flat_row(i, r) for i, r in enumerate(records)], columns=list(COLUMNS))
    frame[list(NUMERIC)] = frame[list(NUMERIC)].astype(float)
    # Plain Python objects rather than pandas' string arrays (missing text stays NaN either way): the views walk
    # these columns in Python, and a string array hands out its values one call at a time.
    text = [c for c in COLUMNS if frame[c].dtype == "str"]
    frame[text] = frame[text].astype(object)
    return frame


def finite(value: Any) -> Any:
    """The value with NaN and infinities spelled as strings: JSON.parse accepts no bare NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


# One encoder for every call: json.dumps builds a new one whenever it is given options.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)


def inert(text: str) -> str:
    """JSON text made inert inside HTML: no '<', '>' or '&' survive unescaped."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def safe_json(value: Any) -> str:
    """Compact JSON that stays inert inside HTML: no '<', '>' or '&' survive unescaped."""
    try:
        text = _ENCODER.encode(value)
    except ValueError:  # a NaN or an infinity somewhere: spelled out by `finite`, which is slower
        text = _ENCODER.encode(finite(value))
    return inert(text)
