"""The one reader of results files, for the runner (resume) and the reporter (the page) alike.

Policy: a line that is not JSON is a torn write (a full disk, a killed machine): it is skipped and named, and
every intact record of the file is kept. A file of another schema, or JSON that is not a record of ours, is
refused whole: half-reading it would silently hide cells.
"""

from __future__ import annotations

import collections
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from harness.record.cell import CellRecord, RecordError
from harness.record.terms import SCHEMA_VERSION

TORN_FIX = "the next `nox -s matrix` of that environment sets the line aside and measures its cell again"


@dataclass(frozen=True)
class SkippedLine:
    path: str
    line: int
    reason: str

    def describe(self) -> str:
        return f"{self.path}:{self.line}: skipped, {self.reason}; {TORN_FIX}"


@dataclass(frozen=True)
class Refusal:
    """One results file (or path) left out whole, with the reason and what to do about it."""

    path: str
    reason: str
    fix: str

    def line(self) -> str:
        return f"{self.path}: {self.reason}; {self.fix}"


@dataclass(frozen=True)
class ResultsFile:
    """What one file gave: its records, the torn lines skipped, or the refusal of the whole file."""

    path: str
    records: List[CellRecord] = field(default_factory=list)
    skipped: List[SkippedLine] = field(default_factory=list)
    refusal: Optional[Refusal] = None
    migrated: Dict[int, int] = field(default_factory=dict)  # older schema version -> records read through it


def read_results(path: Path) -> ResultsFile:
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return ResultsFile(name, refusal=Refusal(name, f"not UTF-8 text ({exc.reason})", _RERENDER))
    except OSError as exc:
        return ResultsFile(
            name, refusal=Refusal(name, f"cannot be read ({exc.strerror or exc})", "check the path and its permissions")
        )
    records: List[CellRecord] = []
    skipped: List[SkippedLine] = []
    migrated: Dict[int, int] = collections.Counter()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            skipped.append(SkippedLine(name, number, f"not valid JSON (a torn write: {exc.msg})"))
            continue
        try:
            records.append(CellRecord.from_json(data))
        except RecordError as exc:
            return ResultsFile(name, refusal=Refusal(name, f"line {number}: {exc.reason}", _FIXES[exc.kind]))
        if data["schema_version"] != SCHEMA_VERSION:
            migrated[data["schema_version"]] += 1
    return ResultsFile(name, records, skipped, migrated=dict(migrated))


_RERENDER = "render it with the harness that wrote it, or move it out of the results folder"
_FIXES = {
    "schema": "render it with the harness version that wrote it, or move it out of the results folder",
    "foreign": "it is not a results file of this harness: move it out of the results folder",
    "malformed": "a record was written or edited by something else than this harness: measure that environment "
    "again into a fresh file (move this one away, then `nox -s matrix`)",
}


def set_aside_torn_lines(path: Path) -> Tuple[int, Optional[Path]]:
    """Move torn lines out of a results file into `<file>.torn`, atomically, before a run appends to it.

    Returns how many lines moved and where. Run by the single writer of the file (one run per file); intact
    lines are kept byte for byte.
    """
    path = Path(path)
    if not path.exists():
        return 0, None
    kept, torn = [], []
    for line in path.read_bytes().splitlines():
        if not line.strip():
            continue
        try:
            json.loads(line.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError is one
            torn.append(line)
            continue
        kept.append(line)
    if not torn:
        return 0, None
    aside = path.with_name(path.name + ".torn")
    with open(aside, "ab") as fh:
        fh.write(b"\n".join(torn) + b"\n")
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as fh:
        fh.write(b"\n".join(kept) + b"\n" if kept else b"")
        fh.flush()
        os.fsync(fh.fileno())
    temporary.replace(path)
    return len(torn), aside
