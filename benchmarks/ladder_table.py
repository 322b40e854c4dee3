"""What the runtime ladder revealed: per family and strategy, how many stored fp32 graphs passed on each runtime.

    python3 benchmarks/ladder_table.py [RESULTS_DIR] [--family grid_sample] [--by-env]

Rows: family and strategy (and the exporting environment with --by-env); columns: each runtime, ordered
onnxruntime then OpenVINO by version; cells: pass / judged. The exporting environment's own onnxruntime is a
column like the others (its exporting cells are its records). Cells that never exported have no graph and are
not counted. Markdown on stdout.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.record import CellRecord, Verdict, ladder_key, read_results  # noqa: E402


def newest_records(folder: str) -> Dict[Tuple, CellRecord]:
    """The newest record of each cell as each runtime judged it, from every results file under `folder`."""
    newest: Dict[Tuple, CellRecord] = {}
    for path in sorted(Path(folder).rglob("*.jsonl")):
        found = read_results(path)
        if found.refusal is not None:
            sys.exit(f"error: {found.refusal.line()}")
        for r in found.records:
            if r.key() not in newest or r.finished_at >= newest[r.key()].finished_at:
                newest[r.key()] = r
    return newest


def judged_graphs(folder: str, precision: str = "fp32") -> List[CellRecord]:
    """Records of graphs a runtime judged at this precision: exporting cells that exported, and every replay."""
    return [
        r
        for r in newest_records(folder).values()
        if r.precision == precision
        and (
            r.kind == "replay"
            or (r.kind == "export" and any(s.name == "export" and s.outcome == "ok" for s in r.stages))
        )
    ]


def runtime_order(label: str) -> Tuple:
    name, _, version = label.partition(" ")
    return ladder_key(name, version)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results")
    parser.add_argument("--family", default=None)
    parser.add_argument("--by-env", action="store_true", help="a row per exporting environment too")
    args = parser.parse_args(argv)
    records = [r for r in judged_graphs(args.results) if not args.family or r.family == args.family]
    counts: Dict[Tuple, Dict[str, List[int]]] = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    for r in records:
        row = (r.family, r.strategy) + ((r.env,) if args.by_env else ())
        cell = counts[row][r.runtime.label]
        cell[0] += r.verdict == Verdict.PASS
        cell[1] += 1
    runtimes = sorted({label for row in counts.values() for label in row}, key=runtime_order)
    head = ["family", "strategy"] + (["exported in"] if args.by_env else [])
    print("| " + " | ".join(head + runtimes) + " |")
    print("|" + "---|" * len(head) + "---:|" * len(runtimes))
    for row in sorted(counts):
        cells = [f"{counts[row][rt][0]}/{counts[row][rt][1]}" if rt in counts[row] else "" for rt in runtimes]
        print("| " + " | ".join(list(row) + cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
