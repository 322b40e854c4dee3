"""The models other people wrote (cases/third_party.py), per environment: the packages each environment resolved for
them, then per case, strategy and opset the verdict of each exporting cell (static shapes), with the second
blocking operator where an export failed on one.

    python3 benchmarks/third_party_table.py [RESULTS_DIR] [--case raft_small,kornia_remap]

Markdown on stdout.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ladder_table import newest_records  # noqa: E402

CASES = ("raft_small", "kornia_remap", "kornia_warp_perspective", "kornia_warp_affine")
SHORT = {"pass": "pass", "not_applicable": "n/a", "export_failed": "export failed", "mismatch": "mismatch"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results")
    parser.add_argument("--case", default=",".join(CASES))
    args = parser.parse_args()
    cases = args.case.split(",")
    mine = [
        r
        for r in newest_records(args.results).values()
        if r.kind == "export" and r.case in cases and r.shape_mode == "static"
    ]
    if not mine:
        sys.exit(f"error: no exporting cell of {args.case} under {args.results}; run `nox -s matrix` first")
    packages = collections.defaultdict(set)
    reasons = {}
    for r in mine:
        packages[r.env].update(f"{k} {v}" for k, v in dict(r.fingerprint.packages).items())
        if r.verdict.value == "not_applicable":
            reasons[(r.env, r.case)] = (r.reason or "").splitlines()[0][:160]
    print("| environment | packages resolved for these cases |\n|---|---|")
    for env in sorted(packages):
        print(f"| {env} | {', '.join(sorted(packages[env])) or 'none resolved'} |")
    rows = collections.defaultdict(dict)
    opsets = sorted({r.opset for r in mine})
    for r in mine:
        rows[(r.case, r.env, r.strategy, r.exporter)][r.opset] = SHORT.get(r.verdict.value, r.verdict.value)
    print("\n| case | environment | strategy | exporter | " + " | ".join(f"opset {o}" for o in opsets) + " |")
    print("|---|---|---|---|" + "---|" * len(opsets))
    for (case, env, strategy, exporter), by_opset in sorted(rows.items()):
        cells = [by_opset.get(o, "") for o in opsets]
        if set(cells) - {""} == {"n/a"}:
            cells = ["n/a"] + [""] * (len(opsets) - 1)
        print(f"| {case} | {env} | {strategy} | {exporter} | " + " | ".join(cells) + " |")
    if reasons:
        print("\nnot applicable, in one line each:")
        for (env, case), reason in sorted(reasons.items()):
            print(f"- {env} {case}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
