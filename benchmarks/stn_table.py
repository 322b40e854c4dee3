"""The tutorial STN per environment, exporter and opset: each grid_sample strategy with torch's affine_grid and
with the custom one, from results files.

    python3 benchmarks/stn_table.py [RESULTS_DIR]   (default: results)

E = export_failed, ≠ = mismatch, – = not_applicable; a count follows when static and dynamic cells agree.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.record import read_results  # noqa: E402

SHORT = {"pass": "pass", "export_failed": "E", "mismatch": "≠", "opset_drift": "drift", "not_applicable": "–"}
STRATEGIES = ("native", "custom", "mmcv", "contrib", "naive")


def main(folder: str = "results") -> int:
    cells = collections.defaultdict(list)
    for path in sorted(Path(folder).rglob("*.jsonl")):
        for r in read_results(path).records:
            if r.case.startswith("stn_tutorial"):
                cells[(r.env, r.exporter, r.opset, r.strategy, r.params["affine_grid"])].append(r.verdict.value)
    print("| env | exporter | opset | " + " | ".join(STRATEGIES) + " |")
    print("|---|---|---|" + "---|" * len(STRATEGIES))
    for env, exporter, opset in sorted({key[:3] for key in cells}):
        row = [_both(cells, (env, exporter, opset, s)) for s in STRATEGIES]
        print(f"| {env} | {exporter} | {opset} | " + " | ".join(row) + " |")
    return 0


def _both(cells, key) -> str:
    """'torch's affine_grid / the custom one', each as verdicts with counts."""
    parts = []
    for affine in ("native", "custom"):
        counts = collections.Counter(cells.get(key + (affine,), []))
        parts.append(",".join(f"{SHORT.get(v, v)}{'' if n == 1 else f' {n}'}" for v, n in sorted(counts.items())))
    return " / ".join(p or "·" for p in parts)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
