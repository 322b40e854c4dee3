"""Where the mismatches first go wrong: per family, the runtime (and precision) that mismatched by the op type of its
first diverging node, with counts, from the `divergence` records of `nox -s diverge`.

    python3 benchmarks/divergence_table.py [RESULTS_DIR] [--precision fp32] [--examples]

Markdown on stdout; --examples adds one graph per table cell (its environment, cell id, case, strategy, parameters
and node) to check by hand.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ladder_table import newest_records  # noqa: E402

from harness.record import ladder_key  # noqa: E402
from harness.report.divergence import STATED, op_label  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results")
    parser.add_argument("--precision", default=None, help="only this precision (fp32, fp16, int8-static, ...)")
    parser.add_argument("--examples", action="store_true", help="one graph per table cell, to check by hand")
    args = parser.parse_args(argv)
    found = [
        r
        for r in newest_records(args.results).values()
        if r.kind == "divergence" and r.divergence and (not args.precision or r.precision == args.precision)
    ]
    counts = collections.Counter(
        (r.family, r.runtime.name, r.runtime.version, r.precision, op_label(r.divergence)) for r in found
    )
    example = {}
    for r in sorted(found, key=lambda r: (r.env, r.cell_id)):
        example.setdefault((r.family, r.runtime.name, r.runtime.version, r.precision, op_label(r.divergence)), r)
    print("| family | runtime | precision | first diverging node (op type) | mismatches |")
    print("|---|---|---|---|---:|")
    order = sorted(counts, key=lambda k: (k[0], ladder_key(k[1], k[2]), k[3], k[4] == STATED, -counts[k], k[4]))
    for key in order:
        print(f"| {key[0]} | {key[1]} {key[2]} | {key[3]} | {key[4]} | {counts[key]} |")
    if args.examples:
        print()
        for key in order:
            r = example[key]
            d = r.divergence
            said = d.where or r.reason
            print(
                f"- {key[1]} {key[2]} {key[3]} {key[4]}: {r.env}/{r.cell_id} {r.case} {r.strategy} {r.params}: {said}"
            )
    print(f"\n{len(found)} divergence records, {sum(r.divergence.node is not None for r in found)} with a node")
    return 0


if __name__ == "__main__":
    sys.exit(main())
