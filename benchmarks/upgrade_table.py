"""What changes on an upgrade, as the page's upgrade view computes it: between two export environments, each judged
by its own runtime, the cells whose verdict, accuracy or cost moves, counted by kind of change and by family and
strategy, then the advice that switches and what the newer one gains.

    python3 benchmarks/upgrade_table.py [RESULTS_DIR] [--old torch2] [--new torch2.15]

Runs in the report environment's Python (pandas): `~/.cache/onnx-compat-matrix/venvs/report-*/bin/python`.
Without --old and --new, the step the page opens on (the newest torch from the one before it). Markdown on stdout.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.report.advisor import advise, grouped_rows  # noqa: E402
from harness.report.divergence import SIDE_KINDS  # noqa: E402
from harness.report.load import load  # noqa: E402
from harness.report.model import env_order, newest_upgrade  # noqa: E402
from harness.report.runtimes import exporting, judged  # noqa: E402
from harness.report.table import FP32, build_frame, made_its_graph  # noqa: E402
from harness.report.upgrade import diff, same_graphs  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results")
    parser.add_argument("--old")
    parser.add_argument("--new")
    args = parser.parse_args()
    loaded = load([args.results])
    records = [r for r in loaded.records if not made_its_graph(r) and r.kind not in SIDE_KINDS]
    frame = build_frame(records)
    envs = env_order(frame, records)
    old, new = newest_upgrade(envs)
    old, new = args.old or old, args.new or new
    if old not in envs or new not in envs:
        sys.exit(f"error: --old {old} --new {new}: the results have the environments {', '.join(envs)}")
    everywhere = judged(frame)
    advice = [a for a in advise(everywhere, grouped_rows(everywhere)) if a.precision == FP32 and a.home]
    result = diff(exporting(frame), advice, old, new, same=same_graphs(records))
    print(f"## {old} -> {new}\n")
    print("| kind of change | cells |\n|---|---:|")
    for kind, count in sorted(result.counts.items(), key=lambda kv: -kv[1]):
        print(f"| {kind} | {count} |")
    by = collections.Counter((c.family, c.strategy, c.kind) for c in result.changes)
    print("\n| family | strategy | kind of change | cells |\n|---|---|---|---:|")
    for (family, strategy, kind), count in sorted(by.items()):
        print(f"| {family} | {strategy} | {kind} | {count} |")
    changed = [s for s in result.switches if s.changed]
    print(f"\nadvice that switches: {len(changed)} of {len(result.switches)} (family, opset, device)")
    for switch in changed:
        print(f"- {switch.family} opset {switch.opset} {switch.device}: {switch.old.text} -> {switch.new.text}")
    for gain in result.gains:
        print(f"- {gain}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
