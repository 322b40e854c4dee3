"""The grid_sample table of README: `bench-op` in every built environment, then one ratio table.

    python3 benchmarks/grid_sample_table.py                    # bilinear/zeros, both 4-D shapes, 3 envs
    python3 benchmarks/grid_sample_table.py --sweep            # also every mode and padding, and 5-D
    python3 benchmarks/grid_sample_table.py --from OUT_DIR     # re-print from the JSON files of a run

Each environment runs in its own interpreter (`.nox/<env>/bin/python`, built by `nox -s matrix`); rows are
interleaved in rounds inside each run (see bench-op), so the ratios compare figures taken side by side.
The JSON files land in OUT_DIR (default benchmarks/out/grid_sample) for later reading.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.host.provision import venv_python  # noqa: E402

ENVS = ("torch1.8", "torch1.12", "torch2")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", default=",".join(ENVS))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "grid_sample"))
    p.add_argument("--budget", type=float, default=3.0, help="seconds per row (bench-op --budget)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--sweep", action="store_true", help="every mode and padding, and the 5-D shape, too")
    p.add_argument("--from", dest="source", default=None, help="only print the tables of an earlier run")
    args = p.parse_args()
    out = Path(args.source or args.out)
    envs = [e for e in args.envs.split(",") if e]
    if not args.source:
        out.mkdir(parents=True, exist_ok=True)
        for env in envs:
            python = venv_python(ROOT / ".nox" / env)
            if not python.exists():
                print(f"error: {python} is missing; build it with: nox -s \"matrix(env='{env}')\"", file=sys.stderr)
                return 2
            runs = [("main", ["--shapes", "ref,fmap", "--budget", str(args.budget), "--rounds", str(args.rounds)])]
            if args.sweep:
                runs.append(
                    (
                        "sweep",
                        ["--shapes", "ref,fmap,vol", "--modes", "bilinear,nearest,bicubic"]
                        + ["--paddings", "zeros,border,reflection", "--impls", "native,custom,ort-kernel,ort-custom"]
                        + ["--budget", str(args.budget / 4), "--rounds", "2"],
                    )
                )
            for name, flags in runs:
                target = out / f"{env}-{name}.json"
                print(f"{env}: bench-op {' '.join(flags)}", file=sys.stderr, flush=True)
                cmd = [str(python), "-m", "harness", "bench-op", *flags, "--json", str(target)]
                subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    print(main_table(out, envs))
    sweep = sweep_table(out, envs)
    if sweep:
        print(sweep)
    return 0


def _load(path: Path) -> Optional[Dict]:
    return json.loads(path.read_text()) if path.exists() else None


def _ms(rows: Dict[str, Dict], impl: str) -> Optional[float]:
    row = rows.get(impl)
    return row["median_ms"] if row else None


def _ratio(a: Optional[float], b: Optional[float]) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def _by_case(records: List[Dict]) -> Dict[tuple, Dict[str, Dict]]:
    cases: Dict[tuple, Dict[str, Dict]] = {}
    for r in records:
        cases.setdefault((r["shape"], r["mode"], r["padding"]), {})[r["impl"]] = r
    return cases


def main_table(out: Path, envs: List[str]) -> str:
    lines = [
        "| environment | shape | native eager ms | custom eager ms | custom / mmcv eager | custom / native eager "
        "| ORT kernel ms | custom in ORT ms | custom / mmcv in ORT | custom / ORT kernel | peak MB custom / mmcv "
        "(eager; ORT) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for env in envs:
        data = _load(out / f"{env}-main.json")
        if not data:
            continue
        e = data["environment"]
        label = f"{env} (torch {e['torch'].split('+')[0]}, ORT {e['onnxruntime']})"
        for (shape, _, _), rows in sorted(_by_case(data["records"]).items(), reverse=True):
            peaks = [(rows.get(a) or {}).get("peak_mb") for a in ("custom", "mmcv", "ort-custom", "ort-mmcv")]
            peak = "{} / {}; {} / {}".format(*("-" if v is None else f"{v:.0f}" for v in peaks))
            lines.append(
                f"| {label} | {shape} | {_timed(rows, 'native')} | {_timed(rows, 'custom')} "
                f"| {_ratio(_ms(rows, 'custom'), _ms(rows, 'mmcv'))} "
                f"| {_ratio(_ms(rows, 'custom'), _ms(rows, 'native'))} "
                f"| {_timed(rows, 'ort-kernel')} | {_timed(rows, 'ort-custom')} "
                f"| {_ratio(_ms(rows, 'ort-custom'), _ms(rows, 'ort-mmcv'))} "
                f"| {_ratio(_ms(rows, 'ort-custom'), _ms(rows, 'ort-kernel'))} | {peak} |"
            )
    lines.append("\n`~`: bench-op flagged the row noisy (IQR above a tenth of the median).")
    return "\n".join(lines) + "\n"


def sweep_table(out: Path, envs: List[str]) -> str:
    lines = []
    for env in envs:
        data = _load(out / f"{env}-sweep.json")
        if not data:
            continue
        if not lines:
            lines = [
                "| environment | shape | mode / padding | custom / native eager | custom in ORT / ORT kernel "
                "| max abs diff (custom ORT; kernel) |",
                "|---|---|---|---:|---:|---|",
            ]
        for (shape, mode, padding), rows in _by_case(data["records"]).items():
            if _ms(rows, "native") is None:
                continue
            diffs = [(rows.get(a) or {}).get("max_abs_diff") for a in ("ort-custom", "ort-kernel")]
            diff = "; ".join("-" if d is None else f"{d:.1e}" for d in diffs)
            kernel = _ratio(_ms(rows, "ort-custom"), _ms(rows, "ort-kernel"))
            if _ms(rows, "ort-kernel") is None:
                kernel += f" ({(rows.get('ort-kernel') or {}).get('note', '')[:60]})"
            lines.append(
                f"| {env} | {shape} | {mode} / {padding} | {_ratio(_ms(rows, 'custom'), _ms(rows, 'native'))} "
                f"| {kernel} | {diff} |"
            )
    return "\n".join(lines) + "\n" if lines else ""


def _fmt(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.2f}"


def _timed(rows: Dict[str, Dict], impl: str) -> str:
    """A row's median, with `~` when bench-op flagged its samples noisy (IQR above a tenth of the median)."""
    row = rows.get(impl) or {}
    return _fmt(row.get("median_ms")) + ("~" if row.get("noisy") else "")


if __name__ == "__main__":
    sys.exit(main())
