"""`python -m harness run|replay|convert|diverge|list|report|bench-op`: one argparse tree; each world adds its flags.

A command returns an exit code (harness.errors.ExitCode); a UserError becomes one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, List, Optional, Tuple

from harness.campaign.flags import OUTPUT, WORKERS, add_flags, csv
from harness.errors import ExitCode, UserError
from harness.record.precisions import CONVERSIONS, SEARCH_BUDGET

SELECTION = ("case", "family", "strategy", "opset", "exporter", "shape-mode", "device", "dtype", "tag", "cases-dir")


def add_selection(p: argparse.ArgumentParser) -> None:
    """The cells a selection names (run and list)."""
    add_flags(p, SELECTION)
    p.add_argument("--env", default=None, help="this environment's name in the records (default: $HARNESS_ENV)")


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    add_selection(run)
    add_flags(run, OUTPUT + WORKERS, out={"help": "results file (default: RESULTS_DIR/ENV[.shard-I-of-N].jsonl)"})
    run.add_argument("--no-artifacts", action="store_true", help="keep no graphs (nothing to replay later)")
    run.add_argument("--tensorrt", action="store_true", help="prefer onnxruntime's TensorRT provider on cuda")
    run.add_argument(
        "--without",
        type=csv,
        default=[],
        metavar="PACKAGE",
        help="leave out the cells of strategies that need these packages (mmcv): nox runs them once mmcv is built",
    )
    run.add_argument(
        "--requirements-plan",
        default=None,
        metavar="FILE",
        help="where each case's requires resolved in this environment (nox writes it; default: this venv as it is)",
    )


def add_replay_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runtime", default=None, help="this runtime environment's name (default: $HARNESS_RUNTIME)")
    p.add_argument("--runtime-kind", default=None, help="onnxruntime or openvino (default: the one installed here)")
    add_flags(
        p,
        ("device", "from-env", "case", "family", "strategy", "precision", "skip-tag") + OUTPUT + WORKERS,
        device={"help": "cpu, or cuda for a GPU runtime (default cpu)"},
        out={"help": "results file (default: RESULTS_DIR/replay-RUNTIME[.shard-I-of-N].jsonl)"},
        timeout={"default": 120.0, "help": "seconds a graph may take (default 120)"},
        threads={"help": "the runtime's threads (default 2, as the exporting cells)"},
        latency_budget={"default": 0.01, "help": "seconds of timing per graph (default 0.01: a third of a cell's)"},
    )


def add_convert_arguments(p: argparse.ArgumentParser) -> None:
    add_flags(
        p,
        ("precision", "tag", "case", "from-env") + OUTPUT + ("jobs", "pin", "timeout", "memory-limit-mb"),
        precision={"help": f"{', '.join(CONVERSIONS)} (default: all)"},
        out={"help": "the conversions' records (default: RESULTS_DIR/convert[.shard-I-of-N].jsonl)"},
        tag={"default": ["model"], "help": "only graphs of cases with these tags (default: model)"},
        timeout={"default": 600.0, "help": "seconds a conversion may take (default 600)"},
    )
    p.add_argument(
        "--search-budget",
        type=int,
        default=SEARCH_BUDGET,
        metavar="N",
        help=f"conversions a recipe search may make for one graph (default {SEARCH_BUDGET}; 0: no search)",
    )
    p.add_argument(
        "--search-every-graph",
        action="store_true",
        help="search a recipe for every graph, not one per case, parameters, strategy and exporter (the static "
        "graph at the highest opset)",
    )


def add_diverge_arguments(p: argparse.ArgumentParser) -> None:
    from harness.diverge import DEFAULT_BUDGET

    p.add_argument("--runtime", default=None, help="this runtime environment's name (default: $HARNESS_RUNTIME)")
    p.add_argument("--runtime-kind", default=None, help="onnxruntime or openvino (default: the one installed here)")
    p.add_argument(
        "--phase",
        choices=("plan", "trace", "locate"),
        default="locate",
        help="trace: store this (trusted) runtime's intermediates; locate: find where this runtime's mismatches part; "
        "plan: print which runtimes have work in each phase (JSON)",
    )
    p.add_argument(
        "--budget",
        type=int,
        default=DEFAULT_BUDGET,
        help=f"mismatches with a trusted judgement to locate, fp32 first (default {DEFAULT_BUDGET})",
    )
    add_flags(
        p,
        OUTPUT + ("jobs", "pin", "timeout", "memory-limit-mb"),
        out={"help": "results file (default: RESULTS_DIR/trace-RUNTIME.jsonl or diverge-RUNTIME.jsonl)"},
        timeout={"default": 120.0, "help": "seconds a graph may take (default 120)"},
    )


def _diverge(args: argparse.Namespace) -> int:
    from harness.diverge.steps import diverge_command

    return diverge_command(args)


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
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="{run,replay,convert,diverge,list,report,bench-op}"
    )
    commands: List[Tuple[str, str, Callable[[argparse.ArgumentParser], Any], Callable[[argparse.Namespace], int]]] = [
        ("run", "run the matrix's cells in this environment and append their records", add_run_arguments, _run),
        ("replay", "judge stored graphs again in this runtime environment (no torch)", add_replay_arguments, _replay),
        ("convert", "convert stored graphs to fp16 and int8 (no torch)", add_convert_arguments, _convert),
        ("diverge", "where each mismatch first parts from a trusted run (no torch)", add_diverge_arguments, _diverge),
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
