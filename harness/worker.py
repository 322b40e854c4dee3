"""A worker process: imports torch once, runs cells sent on stdin, answers one JSON line per cell.

A cell that segfaults, aborts or hangs takes this process down with it, never the run.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import traceback
from typing import Any, Dict, Optional


def _protocol_stream() -> Any:
    """Keep the real stdout for answers; anything else printing to fd 1 lands on stderr."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def _limit_memory(limit_mb: Optional[int]) -> None:
    if limit_mb:
        limit = limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def serve(argv: Optional[list] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m harness.worker")
    parser.add_argument("--env", required=True)
    parser.add_argument("--cases-dir", action="append", default=[])
    parser.add_argument("--options", default="{}", help="harness.pipeline.Options as JSON")
    parser.add_argument("--memory-limit-mb", type=int, default=None)
    args = parser.parse_args(argv)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when the run stops
    proto = _protocol_stream()
    _limit_memory(args.memory_limit_mb)

    from harness.execute import CellExecutor
    from harness.pipeline import Options

    opts = Options(**json.loads(args.options))
    executor = CellExecutor(env_name=args.env, cases_dirs=args.cases_dir, options=opts)
    proto.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        request: Dict[str, Any] = json.loads(line)
        try:
            body = executor.execute(request["cell"])
        except Exception:
            body = {
                "verdict": "harness_error",
                "reason": traceback.format_exc().strip().splitlines()[-1][:300],
                "traceback": traceback.format_exc()[-4000:],
                "stages": [],
            }
        from harness.results import clean

        proto.write(json.dumps(clean({"cell_id": request["cell_id"], "body": body})) + "\n")
        proto.flush()
    return 0


if __name__ == "__main__":
    sys.exit(serve())
