"""The merged records as one flat pandas table (one row per cell), and its CSV and JSON exports."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pandas as pd

from harness.record import FINGERPRINT_KEYS, CellRecord
from harness.report.vocab import runtime_label

# What a cell measures: eager PyTorch, its graph in ORT, the reference eager; and, under `rt`, its graph in the
# runtime that judged it (the "ort" target for onnxruntime, the "openvino" target of an OpenVINO replay).
TARGETS = ("eager", "ort", "reference", "rt")
RUNTIME_TARGET = {"openvino": "openvino"}  # the record's target for a runtime's measurement; "ort" otherwise
FP32 = "fp32"  # the exported graph as is; other precisions are graphs converted from it
NUMERIC = ("max_abs", "max_rel", "atol", "rtol", "min_passing_atol") + tuple(
    prefix + "_" + target for target in TARGETS for prefix in ("lat", "mem")
)
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
    "home",
    "own",
    "precision",
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
    "lat_eager",
    "mem_eager",
    "lat_ort",
    "mem_ort",
    "lat_reference",
    "mem_reference",
    "lat_rt",
    "mem_rt",
    "finished_at",
    "run_id",
)


def number(value: Any) -> Optional[float]:
    """A float for the table, None for what is not a number (a file may hold anything where a number belongs)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def operators_text(record: CellRecord) -> str:
    """The strategies of the model's other operators, "affine_grid=custom"; empty for a one-operator case."""
    return ",".join(f"{family}={name}" for family, name in sorted(record.operators.items()) if family != record.family)


def home_runtime(record: CellRecord) -> str:
    """The exporting environment's own runtime: the one an exporting record was judged by, a replay's origin's."""
    if record.runtime.env is None:
        return runtime_label(record.runtime.name, record.runtime.version)
    return runtime_label("onnxruntime", record.fingerprint.onnxruntime)


def flat_row(index: int, record: CellRecord) -> Dict[str, Any]:
    failed = record.failed_stage()
    label = runtime_label(record.runtime.name, record.runtime.version)
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
        "home": home_runtime(record),
        # an exporting record, or a replay of its very graph in the same runtime (which the replay command never
        # runs); a converted graph (fp16, int8) judged there is a replay like any other
        "own": record.runtime.env is None or (label == home_runtime(record) and record.precision == FP32),
        "precision": record.precision,
        "verdict": record.verdict.value,
        "reason": record.reason,
        "failed_stage": failed.name if failed else None,
        "exported": record.export is not None,  # a graph came out of the exporter (stored for replays, if kept)
        "error_type": failed.error_type if failed else None,
        "message": failed.message if failed else None,
    }
    for key in ("max_abs", "max_rel", "atol", "rtol", "min_passing_atol"):
        row[key] = number(getattr(record.parity, key)) if record.parity else None
    for target in TARGETS:
        measured = RUNTIME_TARGET.get(record.runtime.name, "ort") if target == "rt" else target
        timing, peak = record.latency.get(measured), record.memory.get(measured)
        row["lat_" + target] = number(timing.median_s) if timing else None
        row["mem_" + target] = number(peak.peak_bytes) if peak else None
    row.update({"finished_at": record.finished_at, "run_id": record.run_id})
    return row


def build_frame(records: Sequence[CellRecord]) -> pd.DataFrame:
    """Columns every view uses; `idx` points back into `records` for the details."""
    frame = pd.DataFrame([flat_row(i, r) for i, r in enumerate(records)], columns=list(COLUMNS))
    frame[list(NUMERIC)] = frame[list(NUMERIC)].astype(float)
    return frame


def export_row(record: CellRecord) -> Dict[str, Any]:
    """A wide row for results.csv: every target, every parameter and fingerprint field in its own column."""
    row = flat_row(0, record)
    for key in ("idx", "lat_rt", "mem_rt", "own", "home", "runtime_name", "exported"):
        row.pop(key)
    row.update(runtime=record.runtime.name, runtime_version=record.runtime.version, runtime_env=record.runtime.env)
    for key, value in sorted(record.params.items()):
        row["param_" + key] = json.dumps(value) if isinstance(value, (list, dict)) else value
    for target, timing in sorted(record.latency.items()):
        for key in ("median_s", "iqr_s", "samples", "threads", "noisy"):
            row[f"latency_{target}_{key}"] = getattr(timing, key)
    for target, peak in sorted(record.memory.items()):
        row[f"memory_{target}_peak_bytes"] = peak.peak_bytes
        row[f"memory_{target}_method"] = peak.method
    fingerprint = record.fingerprint.to_json()
    for key in FINGERPRINT_KEYS + tuple(k for k in fingerprint if k not in FINGERPRINT_KEYS):
        value = fingerprint[key]
        row["fingerprint_" + key] = ", ".join(value) if isinstance(value, list) else value
    for key in ("schema_version", "harness_version", "cell_id", "started_at", "wall_s"):
        row[key] = getattr(record, key)
    return row


def finite(value: Any) -> Any:
    """The value with NaN and infinities spelled as strings: JSON.parse accepts no bare NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def safe_json(value: Any, indent: Optional[int] = None) -> str:
    """JSON that stays inert inside HTML: no '<', '>' or '&' survive unescaped."""
    separators = (",", ":") if indent is None else (",", ": ")
    text = json.dumps(
        finite(value), indent=indent, separators=separators, ensure_ascii=False, allow_nan=False, default=str
    )
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def write_exports(records: Sequence[CellRecord], folder: Path) -> List[Path]:
    """results.csv and results.json beside the page: the merged, de-duplicated records."""
    folder.mkdir(parents=True, exist_ok=True)
    csv_path = folder / "results.csv"
    json_path = folder / "results.json"
    pd.DataFrame([export_row(r) for r in records]).to_csv(csv_path, index=False)
    json_path.write_text(safe_json([r.to_json() for r in records], indent=1) + "\n", encoding="utf-8")
    return [csv_path, json_path]
