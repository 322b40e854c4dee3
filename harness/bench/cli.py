"""`python -m harness bench-op`: its flags, their checks, and the run that prints a table per case.

A short pipeline: flags -> BenchRun (or UserError) -> environment -> one table per case as it finishes
-> the JSON file that benchmarks/grid_sample_table.py reads.
"""

from __future__ import annotations

import argparse
import json
import platform
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from harness.bench.measure import (
    BENCH_FORMAT_VERSION,
    IMPLS,
    SHAPES,
    BenchConfig,
    BenchRecord,
    Shape,
    bench_case,
    make_case,
)
from harness.bench.table import render_table
from harness.errors import ExitCode, UserError
from harness.judge.measure import RSS_METHOD, set_threads
from harness.record import EnvInfo, Fingerprint
from harness.strategies.grid_sample import MODES, PADDINGS
from harness.worker.fingerprint import collect


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shapes", default="ref,fmap,vol", help=f"comma-separated, of {', '.join(SHAPES)}")
    p.add_argument("--modes", default="bilinear", help=f"{', '.join(MODES)} (comma-separated)")
    p.add_argument("--paddings", default="zeros", help=f"{', '.join(PADDINGS)} (comma-separated)")
    p.add_argument("--impls", default=",".join(IMPLS), help="which rows to run (default: all)")
    p.add_argument("--threads", type=int, default=2, help="torch and onnxruntime threads (default 2)")
    p.add_argument("--repeat", type=int, default=7, help="minimum timed blocks per row (default 7)")
    p.add_argument("--budget", type=float, default=1.0, help="seconds of timing per row (default 1.0)")
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="interleave the rows' timing in this many rounds, so a slow spell of a shared machine hits "
        "every row alike (default 3)",
    )
    p.add_argument(
        "--opset",
        type=int,
        default=None,
        help="opset of the exported graphs (default 16, or this torch's newest below it)",
    )
    p.add_argument("--align-corners", action="store_true", help="align_corners=True (default False)")
    p.add_argument("--json", default=None, metavar="OUT", help="also write machine-readable records")


@dataclass(frozen=True)
class BenchRun:
    """What the flags asked for, checked."""

    shapes: Tuple[Shape, ...]
    modes: Tuple[str, ...]
    paddings: Tuple[str, ...]
    config: BenchConfig
    json_path: Optional[str]


def run(args: argparse.Namespace) -> int:
    bench = bench_run_from(args)
    set_threads(bench.config.threads)
    env = collect("bench-op")
    environment = environment_of(env.fingerprint, bench.config.threads)
    print(" ".join(f"{k}={v}" for k, v in environment.items()))
    print(preamble(bench.config))
    records = measure_and_print(bench, env)
    if bench.json_path:
        write_json(bench.json_path, environment, records)
    return ExitCode.OK


def bench_run_from(args: argparse.Namespace) -> BenchRun:
    """The flags checked; a bad value is a UserError naming the value to use instead."""
    for flag, value in (("--threads", args.threads), ("--repeat", args.repeat), ("--rounds", args.rounds)):
        if value < 1:
            raise UserError(f"{flag} {value}: must be at least 1, for example {flag} 3")
    if args.budget < 0:
        raise UserError(f"--budget {args.budget:g}: must be 0 or more seconds, for example --budget 1")
    if args.opset is not None and args.opset < 1:
        raise UserError(f"--opset {args.opset}: must be an ONNX opset number, for example --opset 16")
    config = BenchConfig(
        impls=_choices(args.impls, IMPLS, "--impls"),
        threads=args.threads,
        repeat=args.repeat,
        budget_s=args.budget,
        rounds=args.rounds,
        opset=args.opset,
        align_corners=bool(args.align_corners),
    )
    return BenchRun(
        shapes=tuple(SHAPES[s] for s in _choices(args.shapes, tuple(SHAPES), "--shapes")),
        modes=_choices(args.modes, MODES, "--modes"),
        paddings=_choices(args.paddings, PADDINGS, "--paddings"),
        config=config,
        json_path=args.json,
    )


def _choices(text: str, allowed: Sequence[str], flag: str) -> Tuple[str, ...]:
    chosen = tuple(x.strip() for x in text.split(",") if x.strip())
    if not chosen:
        raise UserError(f"{flag} is empty; use one or more of {', '.join(allowed)}, comma-separated")
    for x in chosen:
        if x not in allowed:
            raise UserError(f"{flag} {x}: unknown; use one of {', '.join(allowed)}")
    return chosen


def preamble(config: BenchConfig) -> str:
    return (
        f"timing: median and IQR of blocks over >= {config.budget_s:g} s per row, in {config.rounds} interleaved "
        f"rounds; peak: {RSS_METHOD} "
        "(VmHWM growth of one call after malloc_trim; onnxruntime measured on an arena-free session)\n"
    )


def measure_and_print(bench: BenchRun, env: EnvInfo) -> List[BenchRecord]:
    """Every case in turn, its table printed as soon as it is measured (a long sweep shows progress)."""
    records: List[BenchRecord] = []
    for shape in bench.shapes:
        for mode in bench.modes:
            for padding in bench.paddings:
                rows = bench_case(make_case(shape, mode, padding, bench.config, env))
                records.extend(rows)
                print(render_table(shape, mode, padding, rows), flush=True)
    return records


def environment_of(fingerprint: Fingerprint, threads: int) -> Dict[str, Any]:
    """The JSON's `environment`, keys in the order of the printed first line."""
    return {
        "python": fingerprint.python,
        "torch": fingerprint.torch,
        "threads": threads,
        "machine": platform.machine(),
        "cpu": fingerprint.cpu,
        "onnxruntime": fingerprint.onnxruntime,
    }


def write_json(path: str, environment: Dict[str, Any], records: Sequence[BenchRecord]) -> None:
    document = {
        "schema_version": BENCH_FORMAT_VERSION,
        "environment": environment,
        "records": [asdict(r) for r in records],
    }
    with open(path, "w") as fh:
        json.dump(document, fh, indent=1)
