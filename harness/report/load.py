"""Finding results files, reading each through harness.record's one reader, and merging them.

The reading policy is harness.record's: a torn line is skipped and named, every intact record of its file kept;
a file of another schema, or JSON that is not a record of ours, is refused whole.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterable, List, Sequence, Tuple

from harness.record import CellRecord, Refusal, SkippedLine, read_results


@dataclass(frozen=True)
class SourceFile:
    path: str
    records: int
    migrated: Tuple[Tuple[int, int], ...] = ()  # (older schema version, records read through its migration)
    skipped: Tuple[SkippedLine, ...] = ()


@dataclass(frozen=True)
class Loaded:
    records: List[CellRecord]
    sources: List[SourceFile] = field(default_factory=list)
    refusals: List[Refusal] = field(default_factory=list)
    skipped: List[SkippedLine] = field(default_factory=list)
    superseded: int = 0

    @property
    def migrated(self) -> Dict[int, int]:
        """How many records (before de-duplication) were read through each older schema's migration."""
        total: Counter = Counter()
        for source in self.sources:
            total.update(dict(source.migrated))
        return dict(sorted(total.items()))


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


def _finished(record: CellRecord) -> datetime:
    try:
        moment = datetime.fromisoformat(record.finished_at.replace("Z", "+00:00"))
    except ValueError:
        return datetime.min.replace(tzinfo=timezone.utc)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def dedupe(records: Iterable[CellRecord]) -> Tuple[List[CellRecord], int]:
    """Keep the newest record of each cell (CellRecord.key()) by finished_at, the later-read one on a tie."""
    newest: Dict[Tuple[Any, ...], Tuple[datetime, int, CellRecord]] = {}
    count = 0
    for order, record in enumerate(records):
        count += 1
        key = record.key()
        candidate = (_finished(record), order, record)
        if key not in newest or candidate[:2] >= newest[key][:2]:
            newest[key] = candidate
    kept = [entry[2] for entry in sorted(newest.values(), key=lambda e: e[1])]
    return kept, count - len(kept)


def load(paths: Sequence[str]) -> Loaded:
    files, refusals = discover(paths)
    records: List[CellRecord] = []
    sources: List[SourceFile] = []
    skipped: List[SkippedLine] = []
    for path in files:
        results = read_results(path)
        if results.refusal is not None:
            refusals.append(results.refusal)
            continue
        migrated = tuple(sorted(results.migrated.items()))
        sources.append(SourceFile(results.path, len(results.records), migrated, tuple(results.skipped)))
        skipped.extend(results.skipped)
        records.extend(results.records)
    kept, superseded = dedupe(records)
    return Loaded(kept, sources, refusals, skipped, superseded)
