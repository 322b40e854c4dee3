"""Do repeated runs of the same latency cell agree? Runs one cell N times in fresh workers, side by side.

    python benchmarks/repeat_latency.py [--runs 5] [--budget 0.5] [-- extra harness run args]

Run inside an environment (e.g. `.nox/torch2/bin/python benchmarks/repeat_latency.py`). Prints each run's
median for eager and onnxruntime and the spread (max/min - 1) of the medians.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.record import read_results  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.5)
    parser.add_argument("--case", default="grid_sample_bench")
    parser.add_argument("--strategy", default="custom")
    parser.add_argument("--opset", default="16")
    args, extra = parser.parse_known_args(argv)
    medians = {"eager": [], "ort": []}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.jsonl"
        for _ in range(args.runs):
            cmd = [
                sys.executable,
                "-m",
                "harness",
                "run",
                "--case",
                args.case,
                "--strategy",
                args.strategy,
                "--opset",
                args.opset,
                "--out",
                str(out),
                "--rerun",
                "--quiet",
                "--no-memory",
                "--latency-budget",
                str(args.budget),
                *extra,
            ]
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            subprocess.run(cmd, check=True, env=env, cwd=str(ROOT), stdout=subprocess.DEVNULL)
            records = read_results(out).records
            run = [r for r in records if r.latency][-len({r.cell_id for r in records}) :]
            for r in run:
                for target in medians:
                    medians[target].append((r.params.get("size", r.case), r.latency[target].median_s))
    for target, values in medians.items():
        by_key = {}
        for key, value in values:
            by_key.setdefault(key, []).append(value)
        for key, vals in by_key.items():
            spread = max(vals) / min(vals) - 1
            ms = ", ".join(f"{1000 * v:.3f}" for v in vals)
            print(f"{target:5s} {key}: medians ms [{ms}] spread {100 * spread:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
