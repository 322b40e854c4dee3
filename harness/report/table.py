"""The merged records as one flat pandas table (one row per cell), and its CSV and JSON exports."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pandas as pd

from harness.report.vocab import params_key

FINGERPRINT_KEYS = (
    "python",
    "torch",
    "onnx",
    "onnxruntime",
    "mmcv",
    "onnxscript",
    "platform",
    "cpu",
    "gpu",
    "cuda",
    "driver",
)


NUMERIC = ("max_abs", "max_rel", "atol", "rtol", "min_passing_atol", "lat_eager", "lat_ort", "mem_eager", "mem_ort")
COLUMNS = (
    "idx",
    "env",
    "family",
    "case",
    "params",
    "strategy",
    "portability",
    "opset",
    "actual_opset",
    "exporter",
    "shape_mode",
    "device",
    "dtype",
    "verdict",
    "reason",
    "failed_stage",
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
    "finished_at",
    "run_id",
)


def first_failure(record: Dict[str, Any]) -> Dict[str, Any]:
    """The first failed stage: the one that names the verdict."""
    for stage in record.get("stages") or []:
        if isinstance(stage, dict) and stage.get("outcome") == "failed":
            return stage
    return {}


def _target(block: Any, target: str, key: str) -> Optional[float]:
    if not isinstance(block, dict) or not isinstance(block.get(target), dict):
        return None
    value = block[target].get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def flat_row(index: int, record: Dict[str, Any]) -> Dict[str, Any]:
    parity = record.get("parity") if isinstance(record.get("parity"), dict) else {}
    failed = first_failure(record)
    row: Dict[str, Any] = {
        "idx": index,
        "env": record["env"],
        "family": record["family"],
        "case": record["case"],
        "params": params_key(record["params"]),
        "strategy": record["strategy"],
        "portability": record.get("portability") or "unknown",
        "opset": record["opset"],
        "actual_opset": record.get("actual_opset"),
        "exporter": record["exporter"],
        "shape_mode": record["shape_mode"],
        "device": record["device"],
        "dtype": record["dtype"],
        "verdict": record["verdict"],
        "reason": record.get("reason"),
        "failed_stage": failed.get("name"),
        "error_type": failed.get("error_type"),
        "message": failed.get("message"),
    }
    for key in ("max_abs", "max_rel", "atol", "rtol", "min_passing_atol"):
        value = parity.get(key)
        row[key] = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    for target in ("eager", "ort"):
        row["lat_" + target] = _target(record.get("latency"), target, "median_s")
        row["mem_" + target] = _target(record.get("memory"), target, "peak_bytes")
    row.update({"finished_at": record.get("finished_at"), "run_id": record.get("run_id")})
    return row


def build_frame(records: Sequence[Dict[str, Any]]) -> pd.DataFrame:
    """Columns every view uses; `idx` points back into `records` for the details."""
    frame = pd.DataFrame([flat_row(i, r) for i, r in enumerate(records)], columns=list(COLUMNS))
    frame[list(NUMERIC)] = frame[list(NUMERIC)].astype(float)
    return frame


def export_row(record: Dict[str, Any]) -> Dict[str, Any]:
    """A wide row for results.csv: every target, every parameter and fingerprint field in its own column."""
    row = flat_row(0, record)
    row.pop("idx")
    for key, value in sorted(record["params"].items()):
        row["param_" + key] = json.dumps(value) if isinstance(value, (list, dict)) else value
    for block, keys in (
        ("latency", ("median_s", "iqr_s", "samples", "threads", "noisy")),
        ("memory", ("peak_bytes", "method")),
    ):
        section = record.get(block) if isinstance(record.get(block), dict) else {}
        for target in sorted(section):
            values = section[target] if isinstance(section[target], dict) else {}
            for key in keys:
                row[f"{block}_{target}_{key}"] = values.get(key)
    fingerprint = record.get("fingerprint") if isinstance(record.get("fingerprint"), dict) else {}
    for key in FINGERPRINT_KEYS:
        row["fingerprint_" + key] = fingerprint.get(key)
    for key in ("schema_version", "harness_version", "cell_id", "started_at", "wall_s"):
        row[key] = record.get(key)
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


def write_exports(records: Sequence[Dict[str, Any]], folder: Path) -> List[Path]:
    """results.csv and results.json beside the page: the merged, de-duplicated records."""
    folder.mkdir(parents=True, exist_ok=True)
    csv_path = folder / "results.csv"
    json_path = folder / "results.json"
    pd.DataFrame([export_row(r) for r in records]).to_csv(csv_path, index=False)
    json_path.write_text(safe_json(list(records), indent=1) + "\n", encoding="utf-8")
    return [csv_path, json_path]
