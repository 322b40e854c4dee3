"""A worker process: imports torch once, runs cells sent on stdin, answers one JSON line per cell.

A cell that segfaults, aborts or hangs takes this process down with it, never the run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import IO, Any, Callable, Dict, List, Optional


def _protocol_stream() -> IO[str]:
    """Keep the real stdout for answers; anything else printing to fd 1 lands on stderr."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def _limit_memory(limit_mb: Optional[int]) -> None:
    if limit_mb:  # POSIX only: the parent refuses --memory-limit-mb elsewhere (harness.cli.memory_limit_mb)
        import resource

        limit = limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _parse(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m harness.worker", description="started by `harness run` only")
    parser.add_argument("--env", required=True)
    parser.add_argument("--cases-dir", action="append", default=[])
    parser.add_argument("--options", default="{}", help="harness.worker.options.Options as JSON")
    parser.add_argument("--memory-limit-mb", type=int, default=None)
    parser.add_argument("--cpu", type=int, default=None, help="the core this worker is pinned to")
    return parser.parse_args(argv)


def serve(argv: Optional[List[str]] = None) -> int:
    args = _parse(argv)

    def make() -> Callable[[Dict[str, Any]], Dict[str, Any]]:
        from harness.plan.spec import CellSpec
        from harness.worker.executor import CellExecutor
        from harness.worker.options import Options

        executor = CellExecutor(env_name=args.env, cases_dirs=args.cases_dir, options=Options.from_json(args.options))
        return lambda job: executor.answer(CellSpec.from_dict(job)).to_json()

    return serve_jobs(make, args.memory_limit_mb, args.cpu)


def serve_jobs(
    make: Callable[[], Callable[[Dict[str, Any]], Dict[str, Any]]], memory_limit_mb: Optional[int], cpu: Optional[int]
) -> int:
    """The protocol of every worker process: "ready" once `make()` has built the answerer (torch imported, or the
    runtime), then one answer line per job line, until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when the run stops
    proto = _protocol_stream()
    _limit_memory(memory_limit_mb)
    if cpu is not None:  # before any library starts its threads: they inherit the affinity
        os.sched_setaffinity(0, {cpu})
    answer = make()
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    proto.write(json.dumps({"ready": True, "pid": os.getpid(), "cpus": cpus}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        proto.write(json.dumps({"cell_id": request["cell_id"], "record": answer(request["cell"])}) + "\n")
        proto.flush()
    return 0
