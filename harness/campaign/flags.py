"""The flags that run, replay and convert share, each declared once here; a command names the ones it takes.

A command's own defaults (a replay's shorter timing budget, convert's `--tag model`) are passed where it adds them.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Dict, List, Tuple

from harness.errors import UserError


def csv(text: str) -> List[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def csv_int(text: str) -> List[int]:
    try:
        return [int(x) for x in csv(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


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


def worker_count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text}: at least one worker process, for example --jobs 2")
    return count


# Every shared flag, by its name: its argparse keywords. A command adds the ones it takes with add_flags().
FLAGS: Dict[str, Dict[str, Any]] = {
    # what to select
    "case": dict(type=csv, default=[], help="case names, comma-separated"),
    "family": dict(type=csv, default=[], help="families (grid_sample, resize, ...)"),
    "strategy": dict(type=csv, default=[], help="strategies (native, custom, mmcv, contrib, naive)"),
    "opset": dict(type=csv_int, default=[], help="opsets (default 9,11,13,16,17 and the newest)"),
    "exporter": dict(type=csv, default=[], help="torchscript, dynamo"),
    "shape-mode": dict(type=csv, default=[], help="static, dynamic"),
    "device": dict(type=csv, default=["cpu"], help="cpu, cuda (default cpu)"),
    "dtype": dict(type=csv, default=["float32"], help="float32, float16, ... (default float32)"),
    "tag": dict(type=csv, default=[], help="only cases with one of these tags"),
    "skip-tag": dict(type=csv, default=[], help="leave out the graphs of cases with one of these tags"),
    "cases-dir": dict(action="append", default=[], help="a folder of your own case files"),
    "from-env": dict(type=csv, default=[], help="only graphs exported in these environments"),
    "precision": dict(type=csv, default=[], help="fp32, fp16, int8-dynamic, int8-static (default: every one stored)"),
    # where records and graphs go
    "results-dir": dict(default="results", help="folder of the results files (default: results)"),
    "out": dict(default=None, help="results file (default: the command's own under RESULTS_DIR)"),
    "artifacts": dict(default=None, help="the stored graphs and their samples (default: beside the results)"),
    "shard": dict(default=None, metavar="I/N", help="the I-th of N deterministic slices of the jobs"),
    "rerun": dict(action="store_true", help="run jobs again even when a record exists"),
    "quiet": dict(action="store_true", help="no progress bar; the summary only"),
    # how the workers run
    "jobs": dict(type=worker_count, default=1, help="worker processes (default 1)"),
    "pin": dict(action="store_true", help="pin each worker to a core of its own (Linux)"),
    "threads": dict(type=int, default=2, help="threads for torch and the runtime alike (default 2)"),
    "timeout": dict(type=float, default=300.0, help="seconds a job may take (default 300)"),
    "memory-limit-mb": dict(type=memory_limit_mb, default=None, help="data-segment limit per worker"),
    "no-latency": dict(action="store_true", help="skip the latency stage"),
    "no-memory": dict(action="store_true", help="skip the peak-memory stage"),
    "latency-budget": dict(type=float, default=0.03, help="seconds of timing per target (default 0.03)"),
    "cost-sweeps": dict(
        action="store_true",
        help="time and measure the memory of the correctness sweeps' cells too (tag sweep; by default judged only)",
    ),
}
OUTPUT = ("results-dir", "out", "artifacts", "shard", "rerun", "quiet")
WORKERS = (
    "jobs",
    "pin",
    "threads",
    "timeout",
    "memory-limit-mb",
    "no-latency",
    "no-memory",
    "latency-budget",
    "cost-sweeps",
)


def add_flags(parser: argparse.ArgumentParser, names: Tuple[str, ...], **overrides: Dict[str, Any]) -> None:
    """The named shared flags; `overrides` changes a flag's keywords for this command (`timeout={...}`)."""
    for name in names:
        keywords = dict(FLAGS[name], **overrides.get(name.replace("-", "_"), {}))
        parser.add_argument("--" + name, **keywords)


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
