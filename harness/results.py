"""Results as JSON Lines: one self-describing record per cell, appended whole, read back for resume."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any, Dict, Iterator, Sequence, Set, Tuple

from harness import SCHEMA_VERSION


def clean(value: Any) -> Any:
    """JSON has no NaN or infinity: they become null (the record's note says why)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


class ResultsWriter:
    """Appends one line per record with a single write on an O_APPEND descriptor, then fsyncs.

    A crash can lose the record being written, never corrupt an earlier one; a torn last line (power
    loss) is skipped with a warning by the reader.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(str(self.path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if self.path.stat().st_size and not self._ends_with_newline():
            os.write(self._fd, b"\n")

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"

    def write(self, record: Dict[str, Any]) -> None:
        line = json.dumps(clean(record), sort_keys=True, allow_nan=False) + "\n"
        os.write(self._fd, line.encode("utf-8"))
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


def read_records(path: Path) -> Iterator[Dict[str, Any]]:
    """Records of one file; unreadable lines (a torn write) are skipped."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("schema_version") == SCHEMA_VERSION:
                yield record


def resume_key(cell_id: str, fingerprint_hash: str, harness_version: str, code: str = "") -> Tuple[str, str, str]:
    return (cell_id, fingerprint_hash, f"{harness_version}+{code}")


def done_keys(path: Path) -> Set[Tuple[str, str, str]]:
    """Cells already measured in this file with the same environment, harness version and code."""
    if not Path(path).exists():
        return set()
    keys = set()
    for r in read_records(path):
        if r.get("verdict") in ("harness_error",):
            continue  # a bug of ours: always worth another try
        keys.add(
            resume_key(
                r.get("cell_id", ""),
                r.get("fingerprint_hash", ""),
                r.get("harness_version", ""),
                r.get("code_hash", ""),
            )
        )
    return keys


# What a cell's result depends on besides its spec and environment: the harness code that measures it and
# the case files. The page and bench-op are left out, so editing them keeps every record.
_NOT_MEASURING = ("report", "bench_op.py", "progress.py", "__pycache__")


def code_hash(cases_dirs: Sequence[str] = ()) -> str:
    """A short hash of the harness sources that measure cells and of every case file in use."""
    package = Path(__file__).resolve().parent
    files = [f for f in sorted(package.rglob("*.py")) if not set(f.relative_to(package).parts) & set(_NOT_MEASURING)]
    for folder in [package.parent / "cases", *map(Path, cases_dirs)]:
        files.extend(sorted(Path(folder).glob("*.py")))
    digest = hashlib.sha256()
    for f in files:
        if f.is_file():
            digest.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()[:12]
