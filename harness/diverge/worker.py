"""A diverge worker process (`python -m harness.diverge.worker`, started by `harness diverge` only): loads the
runtime once, then traces each graph it is sent (the trusted side) or locates each mismatch (the mismatching side),
answering one record per job. A graph that crashes the runtime takes this process down, never the campaign."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from harness.campaign.serve import serve_jobs, worker_parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = worker_parser("python -m harness.diverge.worker", "started by `harness diverge`")
    parser.add_argument("--runtime-kind", required=True)
    parser.add_argument("--phase", choices=("trace", "locate"), required=True)
    args = parser.parse_args(argv)

    def make() -> Callable[[Dict[str, Any]], Dict[str, Any]]:
        from harness.artifacts.store import ArtifactStore
        from harness.campaign.options import Options
        from harness.diverge.locate import divergence_blank, locate_job, trace_blank, trace_job
        from harness.record import CellRecord, Divergence, Verdict
        from harness.replay.runtimes import adapter_for

        adapter = adapter_for(args.runtime_kind, args.env, "cpu")
        store = ArtifactStore(Path(Options.from_json(args.options).artifacts_dir or "artifacts"))
        stages = ("parity", "dynamic")

        def trace(job: Dict[str, Any]) -> Dict[str, Any]:
            manifest = store.read(_manifest_path(store, job["graph"]))
            try:
                return trace_job(store, manifest, stages, adapter).to_json()
            except Exception:  # a bug of ours: the graph's record says so
                return _bug(trace_blank(manifest, adapter, Verdict.HARNESS_ERROR, None))

        def locate(job: Dict[str, Any]) -> Dict[str, Any]:
            mismatch = CellRecord.from_json(job["mismatch"])
            trusted = (job["trusted"][0], job["trusted"][1])
            try:
                return locate_job(store, mismatch, trusted, job["trusted_precision"], job["stages"], adapter).to_json()
            except Exception:
                blank = Divergence(f"{trusted[0]} {trusted[1]}", job["trusted_precision"])
                return _bug(divergence_blank(mismatch, blank, Verdict.HARNESS_ERROR, None))

        return trace if args.phase == "trace" else locate

    return serve_jobs(make, args.memory_limit_mb, args.cpu)


def _manifest_path(store: Any, graph: str) -> Path:
    """A graph's job id (env/cell[@precision]) to its manifest."""
    where, _, precision = graph.partition("@")
    env, cell = where.rsplit("/", 1)
    return store.folder(env, cell, precision or "fp32") / "manifest.json"


def _bug(record: Any) -> Dict[str, Any]:
    text = traceback.format_exc()
    return record.with_(reason=text.strip().splitlines()[-1][:300], traceback=text[-4000:]).to_json()


if __name__ == "__main__":
    sys.exit(main())
