"""Harness overhead per cell, from results files: wall time minus the stages that are third-party work.

    python benchmarks/overhead.py results/torch1.8.jsonl [more.jsonl ...]

Overhead = a cell's wall time (from the parent's view: sending the cell, the worker's bookkeeping,
writing the record) minus export, check, onnxruntime load/run, parity, dynamic shapes, the timing loops and
the memory probe. Eager PyTorch (the reference and the strategy) is reported separately.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.record import Verdict, read_results  # noqa: E402

THIRD_PARTY = {"export", "opset", "check", "load", "run", "parity", "dynamic", "latency", "memory"}


def main(paths):
    overhead, eager = [], []
    for path in paths:
        for r in read_results(Path(path)).records:
            if r.verdict is Verdict.NOT_APPLICABLE or not r.stages:
                continue
            spent = sum(s.seconds for s in r.stages if s.name in THIRD_PARTY)
            own = sum(s.seconds for s in r.stages if s.name in ("build", "eager"))
            overhead.append(r.wall_s - spent - own)
            eager.append(own)
    if not overhead:
        print("no run cells in those files")
        return 1
    overhead.sort()
    p90 = overhead[int(0.9 * (len(overhead) - 1))]
    print(
        f"{len(overhead)} cells: harness overhead per cell median {1000 * statistics.median(overhead):.1f} ms, "
        f"p90 {1000 * p90:.1f} ms, max {1000 * overhead[-1]:.1f} ms; "
        f"build+eager median {1000 * statistics.median(eager):.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
