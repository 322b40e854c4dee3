"""An export worker process: imports torch once, runs cells sent on stdin, answers one JSON line per cell
(the protocol of harness.campaign.serve)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from harness.campaign.serve import serve_jobs, worker_parser


def serve(argv: Optional[List[str]] = None) -> int:
    parser = worker_parser("python -m harness.worker", "started by `harness run` only")
    parser.add_argument("--cases-dir", action="append", default=[])
    args = parser.parse_args(argv)

    def make() -> Callable[[Dict[str, Any]], Dict[str, Any]]:
        from harness.campaign.options import Options
        from harness.plan.spec import CellSpec
        from harness.worker.executor import CellExecutor

        executor = CellExecutor(env_name=args.env, cases_dirs=args.cases_dir, options=Options.from_json(args.options))
        return lambda job: executor.answer(CellSpec.from_dict(job)).to_json()

    return serve_jobs(make, args.memory_limit_mb, args.cpu)
