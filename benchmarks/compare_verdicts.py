"""Cell-by-cell verdicts of two sets of results files: what a change of the harness changed.

    python3 benchmarks/compare_verdicts.py BEFORE_DIR AFTER_DIR [--show 20]

Cells are matched by their id (the same spec in the same environment). Prints how many kept their verdict,
every change, and what the cells found on one side only were (by verdict and the reason's first words).
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Dict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.record import CellRecord, read_results  # noqa: E402


def load(folder: str) -> Dict[str, CellRecord]:
    """The newest record of each cell under `folder`."""
    cells: Dict[str, CellRecord] = {}
    for path in sorted(Path(folder).rglob("*.jsonl")):
        found = read_results(path)
        if found.refusal is not None:
            sys.exit(f"error: {found.refusal.line()}")
        for record in found.records:
            if record.cell_id not in cells or record.finished_at >= cells[record.cell_id].finished_at:
                cells[record.cell_id] = record
    return cells


def _gist(record: CellRecord) -> str:
    return f"{record.env} {record.verdict.value}: {(record.reason or '').split(';')[0][:70]}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--show", type=int, default=20, help="changed cells to list (default 20)")
    args = parser.parse_args(argv)
    before, after = load(args.before), load(args.after)
    common = sorted(set(before) & set(after))
    changed = [c for c in common if before[c].verdict != after[c].verdict]
    same = len(common) - len(changed)
    print(
        f"before {len(before)} cells, after {len(after)}; in both {len(common)}: "
        f"{same} same verdict, {len(changed)} changed"
    )
    for cell_id in changed[: args.show]:
        b, a = before[cell_id], after[cell_id]
        where = f"{b.env} {b.case} {b.params_key} {b.strategy} opset{b.opset} {b.exporter}"
        print(f"  {where}: {b.verdict.value} -> {a.verdict.value}")
    for side, mine, other in (("before only", before, after), ("after only", after, before)):
        counts = collections.Counter(_gist(r) for c, r in mine.items() if c not in other)
        print(f"{side}: {sum(counts.values())}")
        for gist, n in counts.most_common():
            print(f"  {n:5d}  {gist}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
