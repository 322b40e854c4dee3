"""results.csv and results.json beside the page: the merged, de-duplicated records, for other tools.

Every session of `nox -s matrix` writes them again, so they are written without dataclasses.asdict's deep copies:
`record_json` gives what CellRecord.to_json() gives (a test holds them equal), and results.json holds one record
per line, which the C JSON encoder writes at once (an indented file needs the pure-Python one).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import fields, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from harness.record import FINGERPRINT_KEYS, CellRecord, Fingerprint
from harness.report.table import flat_row, inert, safe_json

_FIELDS: Dict[type, Tuple[str, ...]] = {}


def plain(value: Any) -> Any:
    """dataclasses.asdict and harness.record.clean in one pass: JSON-ready values, non-finite floats as None."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    names = _FIELDS.get(type(value))
    if names is None:
        if not is_dataclass(value):
            return value
        names = _FIELDS[type(value)] = tuple(f.name for f in fields(value))
    if isinstance(value, Fingerprint):  # its packages are a mapping in JSON, as Fingerprint.to_json writes them
        return dict({name: plain(getattr(value, name)) for name in names}, packages=dict(value.packages))
    return {name: plain(getattr(value, name)) for name in names}


def record_json(record: CellRecord) -> Dict[str, Any]:
    """record.to_json(), quicker."""
    return plain(record)


def _shallow(value: Any) -> Any:
    """The JSON encoder's fallback: a dataclass as its fields (the encoder goes on into them), else its text."""
    names = _FIELDS.get(type(value))
    if names is None:
        if not is_dataclass(value):
            return str(value)
        names = _FIELDS[type(value)] = tuple(f.name for f in fields(value))
    if isinstance(value, Fingerprint):
        return dict({name: getattr(value, name) for name in names}, packages=dict(value.packages))
    return {name: getattr(value, name) for name in names}


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_shallow)


def record_text(record: CellRecord) -> str:
    """safe_json(record.to_json()), written by the C encoder straight from the record's objects."""
    try:
        text = _ENCODER.encode(record)
    except ValueError:  # a NaN or an infinity: null, as to_json writes it
        return safe_json(record_json(record))
    return inert(text)


def export_row(record: CellRecord, fingerprint: Dict[str, Any]) -> Dict[str, Any]:
    """A wide row for results.csv: every target, every parameter and fingerprint field in its own column."""
    row = flat_row(0, record)
    for key in ("idx", "lat_rt", "mem_rt", "own", "home", "runtime_name", "exported"):
        row.pop(key)
    row.update(
        runtime=record.runtime.name,
        runtime_version=record.runtime.version,
        runtime_env=record.runtime.env,
    )
    for key, value in sorted(record.params.items()):
        row["param_" + key] = json.dumps(value) if isinstance(value, (list, dict)) else value
    for target, timing in sorted(record.latency.items()):
        for key in ("median_s", "iqr_s", "samples", "threads", "noisy"):
            row[f"latency_{target}_{key}"] = getattr(timing, key)
    for target, peak in sorted(record.memory.items()):
        row[f"memory_{target}_peak_bytes"] = peak.peak_bytes
        row[f"memory_{target}_method"] = peak.method
    for key in FINGERPRINT_KEYS + tuple(k for k in fingerprint if k not in FINGERPRINT_KEYS):
        value = fingerprint[key]
        if key == "packages":  # a case's own requirements: "kornia 0.6.8"
            value = ", ".join(f"{k} {v}" for k, v in sorted(dict(value or {}).items())) or None
        row["fingerprint_" + key] = ", ".join(value) if isinstance(value, list) else value
    for key in ("schema_version", "harness_version", "cell_id", "started_at", "wall_s"):
        row[key] = getattr(record, key)
    return row


def write_csv(rows: Sequence[Dict[str, Any]], path: Path) -> None:
    """One column per key any row has, in the order first seen; a value as Python writes it, blank for None."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([row.get(c) for c in columns] for row in rows)


def write_exports(records: Sequence[CellRecord], folder: Path) -> List[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    csv_path = folder / "results.csv"
    json_path = folder / "results.json"
    fingerprints = {f: plain(f) for f in {r.fingerprint for r in records}}  # a few machines, thousands of cells
    write_csv([export_row(r, fingerprints[r.fingerprint]) for r in records], csv_path)
    lines = ",\n".join(record_text(r) for r in records)
    json_path.write_text("[\n" + lines + "\n]\n" if lines else "[]\n", encoding="utf-8")
    return [csv_path, json_path]
