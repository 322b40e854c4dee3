"""What int8 and fp16 buy and cost, per strategy, precision, converter and runtime: pass counts, the median of each
graph's mean absolute error and PSNR, and the median latency ratio to the same graph in fp32 on the same runtime. A
conversion that failed (invalid ONNX included) or did not apply is counted on the runtime "converter", under its
converter: it is never a runtime's verdict.

    python3 benchmarks/precision_table.py [RESULTS_DIR] [--family grid_sample] [--tag model]
    python3 benchmarks/precision_table.py [RESULTS_DIR] --recipes [--case stn,stn_tutorial]

Records of converted graphs come from the replays (and results/convert.jsonl for conversions that failed or do not
apply); fp32 rows include the exporting cells. Markdown on stdout.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ladder_table import newest_records, runtime_order  # noqa: E402

from harness.record import CellRecord, Verdict  # noqa: E402
from harness.record.precisions import PRECISION_NAMES as PRECISIONS  # noqa: E402

MADE = ("conversion", "search")  # records a converter wrote


def _converter(r: CellRecord) -> str:
    """What made the graph: its converter (without the version), the runtime's hint, or the exporter."""
    if r.precision.startswith("runtime-"):
        return f"{r.runtime.name} ({r.runtime_settings.get('inference_precision', '?')})"
    return " ".join(w for w in r.converter.split() if not w[:1].isdigit()) if r.converter else "—"


def _order(precision: str) -> int:
    return PRECISIONS.index(precision) if precision in PRECISIONS else len(PRECISIONS)


def _latency(r: CellRecord) -> Optional[float]:
    timing = r.latency.get("ort") or r.latency.get("openvino")
    return timing.median_s if timing else None


def _median(values: List[float], fmt: str) -> str:
    return format(statistics.median(values), fmt) if values else ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results")
    parser.add_argument("--family", default=None)
    parser.add_argument("--tag", default="model")
    parser.add_argument("--recipes", action="store_true", help="the recipe searches' answers instead")
    parser.add_argument("--case", default="", help="cases, comma-separated (with --recipes)")
    args = parser.parse_args(argv)
    records = newest_records(args.results)
    if args.recipes:
        return recipes(records.values(), [c for c in args.case.split(",") if c])
    wanted = [
        r
        for r in records.values()
        if (not args.family or r.family == args.family)
        and args.tag in r.tags
        and not (r.kind in MADE and r.verdict == Verdict.PASS)  # its graph's verdicts are the replays'
        and (r.kind != "export" or any(s.name == "export" and s.outcome == "ok" for s in r.stages))
    ]
    fp32 = {r.key()[1:-1]: r for r in wanted if r.precision == "fp32"}  # the same cell on the same runtime, in fp32
    rows: Dict[Tuple, List[CellRecord]] = collections.defaultdict(list)
    for r in wanted:
        runtime = "converter" if r.kind in MADE else r.runtime.label
        rows[(r.strategy, r.precision, _converter(r), runtime)].append(r)
    print(
        "| strategy | precision | converter | runtime | pass / judged | median mean abs error | median PSNR dB | "
        "latency / fp32 |"
    )
    print("|---|---|---|---|---:|---:|---:|---:|")
    order = sorted(rows, key=lambda k: (k[0], _order(k[1]), k[2], runtime_order(k[3])))
    for strategy, precision, converter, runtime in order:
        group = rows[(strategy, precision, converter, runtime)]
        passed = sum(r.verdict == Verdict.PASS for r in group)
        errors = [
            r.parity.mean_abs
            for r in group
            if r.parity and r.parity.mean_abs is not None and r.verdict in (Verdict.PASS, Verdict.MISMATCH)
        ]
        psnr = [r.parity.psnr for r in group if r.parity and r.parity.psnr is not None]
        ratios = []
        for r in group:
            base = fp32.get(r.key()[1:-1])
            if base is not None and _latency(r) and _latency(base):
                ratios.append(_latency(r) / _latency(base))
        print(
            f"| {strategy} | {precision} | {converter} | {runtime} | {passed} / {len(group)} | "
            f"{_median(errors, '.2g')} | {_median(psnr, '.1f')} | {_median(ratios, '.2f') + 'x' if ratios else ''} |"
        )
    return 0


def recipes(records, cases: List[str]) -> int:
    """Per environment, case, parameters, strategy and searched precision: what the search answered."""
    print(
        "| env | case | params | strategy | opset | precision | answer | kept float | float nodes | conversions / "
        "budget | needs atol / atol | PSNR dB |"
    )
    print("|---|---|---|---|---:|---|---|---|---:|---:|---:|---:|")
    found = [r for r in records if r.kind == "search" and (not cases or r.case in cases)]
    for r in sorted(found, key=lambda r: (r.case, r.params_key, r.precision, r.env, r.strategy)):
        recipe = r.recipe or {}
        kept = ", ".join(f"{op} {name}" for name, op in recipe.get("kept_float") or ())
        answer = {"pass": "passes", "mismatch": "none within budget"}.get(r.verdict.value, r.verdict.value)
        if r.verdict == Verdict.PASS and not kept and not recipe.get("options"):
            answer = "passes as converted"
        elif recipe.get("options"):
            answer += f" ({', '.join(f'{k}={v}' for k, v in recipe['options'].items())})"
        need = recipe.get("min_passing_atol")
        atol = recipe.get("atol")
        ratio = f"{need:.3g} / {atol:.3g}" if isinstance(need, (int, float)) and isinstance(atol, (int, float)) else ""
        psnr = recipe.get("psnr")
        print(
            f"| {r.env} | {r.case} | {r.params_key} | {r.strategy} | {r.opset} | {r.precision} | {answer} | "
            f"{kept or ('—' if recipe else (r.reason or '')[:90])} | {recipe.get('float_nodes', '')} of "
            f"{recipe.get('nodes', '')} | {recipe.get('conversions', '')} / {recipe.get('budget', '')} | {ratio} | "
            f"{'' if psnr is None else format(psnr, '.1f')} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
