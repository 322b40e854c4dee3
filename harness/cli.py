"""`python -m harness run|replay|convert|list|report|bench-op`: one argparse tree; each world adds its flags.

A command returns an exit code (harness.errors.ExitCode); a UserError becomes one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple

from harness.errors import ExitCode, UserError


def artifacts_dir(args: argparse.Namespace) -> Path:
    """--artifacts; else `artifacts` beside the results folder (results/ -> artifacts/), or beside --out's file."""
    if args.artifacts:
        return Path(args.artifacts)
    if args.out:
        return Path(args.out).resolve().parent / "artifacts"
    return Path(args.results_dir).resolve().parent / "artifacts"


def pinned_cpus(args: argparse.Namespace) -> Tuple[int, ...]:
    """--pin: one core per worker from the cores this process may use; a clear error where that cannot be."""
    if not getattr(args, "pin", False):
        return ()
    if not hasattr(os, "sched_getaffinity"):
        raise UserError("--pin needs Linux (os.sched_getaffinity); drop --pin on this platform")
    cores = sorted(os.sched_getaffinity(0))
    if args.jobs > len(cores):
        raise UserError(
            f"--pin --jobs {args.jobs}: only {len(cores)} cores are available here; pass --jobs {len(cores)}"
        )
    return tuple(cores[: max(1, args.jobs)])


def memory_limit_mb(text: str) -> int:
    """--memory-limit-mb: a worker's data-segment rlimit, which POSIX has and Windows does not."""
    try:
        import resource  # noqa: F401
    except ImportError:
        raise argparse.ArgumentTypeError(
            "a worker's memory limit is a POSIX rlimit, which this platform lacks; drop --memory-limit-mb"
        ) from None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of MiB, got {text!r}") from None


def _csv(text: str) -> List[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _csv_int(text: str) -> List[int]:
    try:
        return [int(x) for x in _csv(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def add_selection(p: argparse.ArgumentParser) -> None:
    p.add_argument("--case", type=_csv, default=[], help="case names, comma-separated")
    p.add_argument("--family", type=_csv, default=[], help="families (grid_sample, resize, ...)")
    p.add_argument("--strategy", type=_csv, default=[], help="strategies (native, custom, mmcv, contrib, naive)")
    p.add_argument("--opset", type=_csv_int, default=[], help="opsets (default 9,11,13,16,17 and the newest)")
    p.add_argument("--exporter", type=_csv, default=[], help="torchscript, dynamo")
    p.add_argument("--shape-mode", type=_csv, default=[], help="static, dynamic")
    p.add_argument("--device", type=_csv, default=["cpu"], help="cpu, cuda (default cpu)")
    p.add_argument("--dtype", type=_csv, default=["float32"], help="float32, float16, ... (default float32)")
    p.add_argument("--tag", type=_csv, default=[], help="only cases with one of these tags")
    p.add_argument("--cases-dir", action="append", default=[], help="a folder of your own case files")
    p.add_argument("--env", default=None, help="this environment's name in the records (default: $HARNESS_ENV)")


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    add_selection(run)
    run.add_argument("--results-dir", default="results", help="folder of the results files (default: results)")
    run.add_argument("--out", default=None, help="results file (default: RESULTS_DIR/ENV[.shard-I-of-N].jsonl)")
    run.add_argument("--shard", default=None, metavar="I/N", help="run the I-th of N deterministic slices")
    run.add_argument("--rerun", action="store_true", help="run cells again even when a record exists")
    run.add_argument("--jobs", type=int, default=1, help="worker processes (0: run in this process; default 1)")
    run.add_argument("--pin", action="store_true", help="pin each worker to a core of its own (Linux)")
    run.add_argument("--threads", type=int, default=2, help="threads for torch and onnxruntime alike (default 2)")
    run.add_argument("--timeout", type=float, default=300.0, help="seconds a cell may take (default 300)")
    run.add_argument("--memory-limit-mb", type=memory_limit_mb, default=None, help="data-segment limit per worker")
    run.add_argument("--no-latency", action="store_true", help="skip the latency stage")
    run.add_argument("--no-memory", action="store_true", help="skip the peak-memory stage")
    run.add_argument("--latency-budget", type=float, default=0.03, help="seconds of timing per target (default 0.03)")
    run.add_argument("--tensorrt", action="store_true", help="prefer onnxruntime's TensorRT provider on cuda")
    run.add_argument(
        "--artifacts", default=None, help="keep each exported graph and its samples here (default: beside the results)"
    )
    run.add_argument("--no-artifacts", action="store_true", help="keep no graphs (nothing to replay later)")
    run.add_argument("--quiet", action="store_true", help="no progress bar; the summary only")


def add_replay_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--artifacts", default=None, help="the folder `harness run` kept the graphs in (default: beside the results)"
    )
    p.add_argument("--runtime", default=None, help="this runtime environment's name (default: $HARNESS_RUNTIME)")
    p.add_argument("--runtime-kind", default=None, help="onnxruntime or openvino (default: the one installed here)")
    p.add_argument("--device", default="cpu", help="cpu, or cuda for a GPU runtime (default cpu)")
    p.add_argument("--from-env", type=_csv, default=[], help="only graphs exported in these environments")
    p.add_argument("--case", type=_csv, default=[], help="case names, comma-separated")
    p.add_argument("--family", type=_csv, default=[], help="families (grid_sample, resize, ...)")
    p.add_argument("--strategy", type=_csv, default=[], help="strategies (native, custom, mmcv, contrib, naive)")
    p.add_argument(
        "--precision", type=_csv, default=[], help="fp32, fp16, int8-dynamic, int8-static (default: every one stored)"
    )
    p.add_argument("--results-dir", default="results", help="folder of the results files (default: results)")
    p.add_argument(
        "--out", default=None, help="results file (default: RESULTS_DIR/replay-RUNTIME[.shard-I-of-N].jsonl)"
    )
    p.add_argument("--shard", default=None, metavar="I/N", help="judge the I-th of N deterministic slices")
    p.add_argument("--rerun", action="store_true", help="judge graphs again even when a record exists")
    p.add_argument("--jobs", type=int, default=1, help="replay worker processes (default 1)")
    p.add_argument("--pin", action="store_true", help="pin each worker to a core of its own (Linux)")
    p.add_argument("--threads", type=int, default=2, help="the runtime's threads (default 2, as the exporting cells)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds a graph may take (default 120)")
    p.add_argument("--memory-limit-mb", type=memory_limit_mb, default=None, help="data-segment limit per worker")
    p.add_argument("--no-latency", action="store_true", help="skip the latency stage")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory stage")
    p.add_argument(
        "--latency-budget",
        type=float,
        default=0.01,
        help="seconds of timing per graph (default 0.01: a third of a cell's)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar; the summary only")


def add_convert_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--artifacts", default=None, help="the folder `harness run` kept the graphs in (default: beside the results)"
    )
    p.add_argument("--precision", type=_csv, default=[], help="fp16, int8-dynamic, int8-static (default: all three)")
    p.add_argument("--tag", type=_csv, default=["model"], help="only graphs of cases with these tags (default: model)")
    p.add_argument("--case", type=_csv, default=[], help="case names, comma-separated")
    p.add_argument("--from-env", type=_csv, default=[], help="only graphs exported in these environments")
    p.add_argument("--results-dir", default="results", help="where convert.jsonl records failed conversions")
    p.add_argument("--out", default=None, help="the conversions' records (default: RESULTS_DIR/convert.jsonl)")
    p.add_argument("--rerun", action="store_true", help="convert again even when a converted graph exists")


def _convert(args: argparse.Namespace) -> int:
    from harness.artifacts.command import convert_command

    return convert_command(args)


def _replay(args: argparse.Namespace) -> int:
    from harness.replay.steps import replay_command

    return replay_command(args)


def _run(args: argparse.Namespace) -> int:
    from harness.run.steps import run_command

    return run_command(args)


def _list(args: argparse.Namespace) -> int:
    from harness.run.listing import list_command

    return list_command(args)


def _report(args: argparse.Namespace) -> int:
    from harness.report.cli import run

    return run(args)


def _bench(args: argparse.Namespace) -> int:
    from harness.bench.cli import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    from harness.bench import cli as bench_cli
    from harness.report import cli as report_cli

    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="{run,replay,convert,list,report,bench-op}")
    commands: List[Tuple[str, str, Callable[[argparse.ArgumentParser], Any], Callable[[argparse.Namespace], int]]] = [
        ("run", "run the matrix's cells in this environment and append their records", add_run_arguments, _run),
        ("replay", "judge stored graphs again in this runtime environment (no torch)", add_replay_arguments, _replay),
        ("convert", "convert stored graphs to fp16 and int8 (no torch)", add_convert_arguments, _convert),
        ("list", "list the cases, strategies, cells and this environment's limits", _add_list_arguments, _list),
        ("report", "render the HTML page from results files (no torch needed)", report_cli.add_arguments, _report),
        ("bench-op", "benchmark grid_sample implementations side by side", bench_cli.add_arguments, _bench),
    ]
    for name, text, add, handler in commands:
        p = sub.add_parser(name, help=text, description=text)
        add(p)
        p.set_defaults(handler=handler)
    return parser


def _add_list_arguments(p: argparse.ArgumentParser) -> None:
    add_selection(p)
    p.add_argument("--cells", action="store_true", help="list every cell, not only the cases")


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse has already explained
        return exc.code if isinstance(exc.code, int) else ExitCode.USAGE
    try:
        return int(args.handler(args))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
