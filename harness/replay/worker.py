"""A replay worker process (`python -m harness.replay.worker`, started by `harness replay` only): loads the runtime
once, judges each stored graph it is sent, answers one record per graph. A graph that crashes the runtime takes
this process down, never the replay."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from harness.campaign.serve import serve_jobs, worker_parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = worker_parser("python -m harness.replay.worker", "started by `harness replay`")
    parser.add_argument("--runtime-kind", required=True)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    def make() -> Callable[[Dict[str, Any]], Dict[str, Any]]:
        from harness.artifacts.store import ArtifactStore
        from harness.campaign.options import Options
        from harness.judge.zygote import Zygote, ZygoteError
        from harness.record import Verdict
        from harness.replay.judge import replay_blank, replay_graph, replay_stored, warm_up
        from harness.replay.runtimes import adapter_for

        opts = Options.from_json(args.options)
        adapter = adapter_for(args.runtime_kind, args.env, args.device)
        if opts.memory and adapter.name == "onnxruntime" and adapter.device == "cpu":
            # before any graph: each graph is judged in a process forked from the fresh runtime, so that its
            # footprint is a deployer's process's, whatever this worker judged before
            adapter.zygote = Zygote.start(lambda: warm_up(adapter))
        store = ArtifactStore(Path(opts.artifacts_dir or "artifacts"))

        def judged(manifest: Any, precision: str) -> Any:
            """In a child of the zygote where there is one; a child that died is judged here again, so that a graph
            that crashes the runtime crashes this worker, and the pool records it, as without a zygote."""
            if adapter.zygote is not None and opts.costs(manifest.tags):  # no memory to measure: no child needed
                try:
                    arrays = store.samples_of(manifest)
                    return adapter.zygote.call(replay_stored, manifest, store.root, arrays, adapter, opts, precision)
                except (ZygoteError, OSError, ValueError):  # judged here, its stages say what went wrong
                    pass
            return replay_graph(manifest, store, adapter, opts, precision)

        def answer(job: Dict[str, Any]) -> Dict[str, Any]:
            manifest = store.read(Path(job["manifest"]))
            try:
                return judged(manifest, job["precision"]).to_json()
            except Exception:  # a bug of ours outside the stages: the graph's record says so
                text = traceback.format_exc()
                reason = text.strip().splitlines()[-1][:300]
                record = replay_blank(manifest, adapter, Verdict.HARNESS_ERROR, reason, job["precision"])
                return record.with_(traceback=text[-4000:]).to_json()

        return answer

    return serve_jobs(make, args.memory_limit_mb, args.cpu)


if __name__ == "__main__":
    sys.exit(main())
