"""Finding, reading and merging results files; a file this reporter cannot read is refused, never half-read."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from harness.report.vocab import VERDICT_NAMES, params_key

READABLE_SCHEMA_VERSION = 1

# What a record needs to be placed in the matrix; everything else is optional and shown when present.
REQUIRED_KEYS: Tuple[Tuple[str, Tuple[type, ...]], ...] = (
    ("schema_version", (int,)),
    ("env", (str,)),
    ("family", (str,)),
    ("case", (str,)),
    ("params", (dict,)),
    ("strategy", (str,)),
    ("opset", (int,)),
    ("exporter", (str,)),
    ("shape_mode", (str,)),
    ("device", (str,)),
    ("dtype", (str,)),
    ("verdict", (str,)),
    ("finished_at", (str,)),
)
CELL_KEY_FIELDS = ("env", "case", "params", "strategy", "opset", "exporter", "shape_mode", "device", "dtype")

RERUN_FIX = "re-run `nox -s matrix` for that environment and render again"


@dataclass(frozen=True)
class Refusal:
    """One results file (or path) left out of the page, with the reason and what to do about it."""

    path: str
    reason: str
    fix: str

    def line(self) -> str:
        return f"{self.path}: {self.reason}; {self.fix}"


@dataclass(frozen=True)
class SourceFile:
    path: str
    records: int


@dataclass(frozen=True)
class Loaded:
    records: List[Dict[str, Any]]
    sources: List[SourceFile] = field(default_factory=list)
    refusals: List[Refusal] = field(default_factory=list)
    superseded: int = 0


class _Unreadable(Exception):
    def __init__(self, reason: str, fix: str = RERUN_FIX, whole_file: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix
        self.whole_file = whole_file


def discover(paths: Sequence[str]) -> Tuple[List[Path], List[Refusal]]:
    """Files named directly, and every *.jsonl under the folders named, each once, in a stable order."""
    found: List[Path] = []
    refusals: List[Refusal] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
            if not inside:
                refusals.append(
                    Refusal(
                        text,
                        "no *.jsonl files in this folder",
                        "run `nox -s matrix` first or pass the folder holding the results",
                    )
                )
            found.extend(inside)
        elif path.is_file():
            found.append(path)
        else:
            refusals.append(
                Refusal(text, "no such file or folder", "pass results files or folders (default: results/)")
            )
    unique: List[Path] = []
    seen = set()
    for path in found:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return unique, refusals


def check_record(record: Any) -> None:
    """Raise _Unreadable when a parsed line is not a record of the schema this reporter reads."""
    if not isinstance(record, dict):
        raise _Unreadable(f"a line holds a JSON {type(record).__name__} instead of an object")
    version = record.get("schema_version")
    if version != READABLE_SCHEMA_VERSION or isinstance(version, bool):
        raise _Unreadable(
            f"schema_version {json.dumps(version)} is not readable by this harness (reads {READABLE_SCHEMA_VERSION})",
            "re-run `nox -s matrix` with this version or render with the harness that wrote it",
            whole_file=True,
        )
    missing = [key for key, _ in REQUIRED_KEYS if key not in record or record[key] is None]
    if missing:
        raise _Unreadable("missing required keys: {}".format(", ".join(missing)))
    for key, types in REQUIRED_KEYS:
        value = record[key]
        if not isinstance(value, types) or (types == (int,) and isinstance(value, bool)):
            raise _Unreadable(f"key {key!r} should be {types[0].__name__}, got {json.dumps(value)[:40]}")
    if record["verdict"] not in VERDICT_NAMES:
        raise _Unreadable("unknown verdict {}".format(json.dumps(record["verdict"])[:40]))


def _read_lines(path: Path) -> List[Dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _Unreadable(f"not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise _Unreadable(f"cannot be read ({exc.strerror or exc})", "check the path and its permissions") from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise _Unreadable(
                f"line {number} is not valid JSON ({exc}), the file is truncated or corrupt",
                "re-run `nox -s matrix` for that environment (or delete the broken line) and render again",
            ) from None
        try:
            check_record(record)
        except _Unreadable as exc:
            if exc.whole_file:
                raise
            raise _Unreadable(f"line {number}: {exc.reason}", exc.fix) from None
        records.append(record)
    return records


def read_file(path: Path) -> Tuple[List[Dict[str, Any]], Optional[Refusal]]:
    """All records of one file, or none and the reason: a half-read file would silently hide cells."""
    try:
        return _read_lines(path), None
    except _Unreadable as exc:
        return [], Refusal(str(path), exc.reason, exc.fix)


def cell_key(record: Dict[str, Any]) -> Tuple[Any, ...]:
    return tuple(params_key(record["params"]) if k == "params" else record[k] for k in CELL_KEY_FIELDS)


def _finished(record: Dict[str, Any]) -> datetime:
    text = str(record.get("finished_at", ""))
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return datetime.min.replace(tzinfo=timezone.utc)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def dedupe(records: Iterable[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], int]:
    """Keep the newest record of each cell by finished_at (the later-read one on a tie)."""
    newest: Dict[Tuple[Any, ...], Tuple[datetime, int, Dict[str, Any]]] = {}
    count = 0
    for order, record in enumerate(records):
        count += 1
        key = cell_key(record)
        candidate = (_finished(record), order, record)
        if key not in newest or candidate[:2] >= newest[key][:2]:
            newest[key] = candidate
    kept = [entry[2] for entry in sorted(newest.values(), key=lambda e: e[1])]
    return kept, count - len(kept)


def load(paths: Sequence[str]) -> Loaded:
    files, refusals = discover(paths)
    records: List[Dict[str, Any]] = []
    sources: List[SourceFile] = []
    for path in files:
        found, refusal = read_file(path)
        if refusal is not None:
            refusals.append(refusal)
            continue
        sources.append(SourceFile(str(path), len(found)))
        records.extend(found)
    kept, superseded = dedupe(records)
    return Loaded(kept, sources, refusals, superseded)
