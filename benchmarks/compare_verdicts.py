"""Record-by-record verdicts of two sets of results files: what a change of the harness changed.

    python3 benchmarks/compare_verdicts.py BEFORE_DIR AFTER_DIR [--show 20]

Records are matched by their identity (CellRecord.key(): the kind, the cell's spec in its environment, the runtime
that judged it and the precision), so an exported cell, each of its replays and each of its conversions are
compared on their own. A conversion that made its graph has no verdict of its own (its replays judge the graph)
and is left out. Prints, per kind, how many kept their verdict, every change, and what was found on one side only
(by verdict and the reason's first words).
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Dict, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.record import CellRecord, RecordKind, Verdict, read_results  # noqa: E402


def load(folder: str) -> Dict[Tuple, CellRecord]:
    """The newest record of each identity under `folder`."""
    records: Dict[Tuple, CellRecord] = {}
    for path in sorted(Path(folder).rglob("*.jsonl")):
        found = read_results(path)
        if found.refusal is not None:
            sys.exit(f"error: {found.refusal.line()}")
        for record in found.records:
            if record.kind == RecordKind.CONVERSION.value and record.verdict == Verdict.PASS:
                continue
            key = record.key()
            if key not in records or record.finished_at >= records[key].finished_at:
                records[key] = record
    return records


def _gist(record: CellRecord) -> str:
    reason = (record.reason or "").split(";")[0][:60]
    return f"{record.kind} {record.env} {record.runtime.label} {record.verdict.value}: {reason}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--show", type=int, default=20, help="changed records to list (default 20)")
    args = parser.parse_args(argv)
    before, after = load(args.before), load(args.after)
    common = sorted(set(before) & set(after), key=str)
    changed = [k for k in common if before[k].verdict != after[k].verdict]
    print(f"before {len(before)} records, after {len(after)}; in both {len(common)}, {len(changed)} changed verdict")
    for kind in RecordKind:
        mine = [k for k in common if k[0] == kind.value]
        moved = [k for k in changed if k[0] == kind.value]
        print(f"  {kind.value}: {len(mine)} in both, {len(mine) - len(moved)} same verdict, {len(moved)} changed")
    for key in changed[: args.show]:
        b, a = before[key], after[key]
        where = f"{b.kind} {b.env} {b.case} {b.params_key} {b.strategy} opset{b.opset} {b.exporter} {b.runtime.label}"
        print(f"  {where} {b.precision}: {b.verdict.value} -> {a.verdict.value}")
    for side, mine, other in (("before only", before, after), ("after only", after, before)):
        counts = collections.Counter(_gist(r) for k, r in mine.items() if k not in other)
        print(f"{side}: {sum(counts.values())}")
        for gist, n in counts.most_common(args.show):
            print(f"  {n:5d}  {gist}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
