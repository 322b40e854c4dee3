"""A converter worker process (`python -m harness.artifacts.worker`, started by `harness convert` only): converts
each stored fp32 graph it is sent to the precision asked, answers one record per conversion. A converter that
crashes takes this process down, never the conversions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from harness.campaign.serve import serve_jobs, worker_parser
from harness.record.precisions import SEARCH_BUDGET


def main(argv: Optional[List[str]] = None) -> int:
    parser = worker_parser("python -m harness.artifacts.worker", "started by `harness convert`")
    parser.add_argument("--search-budget", type=int, default=SEARCH_BUDGET)
    args = parser.parse_args(argv)

    def make() -> Callable[[Dict[str, Any]], Dict[str, Any]]:
        from harness.artifacts.outcome import convert_job
        from harness.artifacts.store import ArtifactStore
        from harness.campaign.options import Options

        store = ArtifactStore(Path(Options.from_json(args.options).artifacts_dir or "artifacts"))

        def answer(job: Dict[str, Any]) -> Dict[str, Any]:
            manifest = store.read(Path(job["manifest"]))
            return convert_job(store, manifest, job["precision"], args.search_budget).to_json()

        return answer

    return serve_jobs(make, args.memory_limit_mb, args.cpu)


if __name__ == "__main__":
    sys.exit(main())
