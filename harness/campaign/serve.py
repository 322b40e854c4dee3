"""The protocol of every worker process (an export worker, a replay worker, a converter): "ready" once its
answerer is built, then one JSON answer line per JSON job line, until stdin closes. A job that segfaults, aborts or
hangs takes its worker down with it, never the command (harness.campaign.pool replaces the worker)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import IO, Any, Callable, Dict, Optional

Answer = Callable[[Dict[str, Any]], Dict[str, Any]]


def worker_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The arguments every worker takes from the pool (harness.campaign.pool.WorkerConfig.command)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--env", required=True, help="the environment's name in the records")
    parser.add_argument("--options", default="{}", help="harness.campaign.options.Options as JSON")
    parser.add_argument("--memory-limit-mb", type=int, default=None)
    parser.add_argument("--cpu", type=int, default=None, help="the core this worker is pinned to")
    return parser


def _protocol_stream() -> IO[str]:
    """Keep the real stdout for answers; anything else printing to fd 1 lands on stderr."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def _limit_memory(limit_mb: Optional[int]) -> None:
    if limit_mb:  # POSIX only: the parent refuses --memory-limit-mb elsewhere (harness.campaign.flags)
        import resource

        limit = limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def serve_jobs(make: Callable[[], Answer], memory_limit_mb: Optional[int], cpu: Optional[int]) -> int:
    """Build the answerer (`make()`: torch imported, or the runtime), say ready, answer each job line."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when the work stops
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
