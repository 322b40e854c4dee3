"""`python -m harness replay`: the replay campaign. Its own tasks find the stored graphs and this runtime; the
shared steps (harness.campaign.chain) judge them.

load -> discover -> select -> ReplayKind -> drop_done -> open_results -> decide -> share -> execute
-> summarise
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from harness.artifacts.jobs import GraphJob, graph_job, judgement_key, stored_graphs
from harness.artifacts.store import ArtifactStore, Manifest
from harness.campaign.chain import Kind, conduct, pipeline
from harness.campaign.files import results_path, worker_log
from harness.campaign.flags import artifacts_dir
from harness.campaign.keys import REPLAY_CODE, Key, code_hash, in_shard, parse_shard, resume_key
from harness.campaign.pool import WorkerConfig
from harness.errors import UserError
from harness.record import CellRecord, RecordKind, Verdict, job_id
from harness.record.precisions import RUNTIME_DEFAULT, RUNTIME_PRECISIONS
from harness.replay.judge import replay_blank
from harness.replay.runtimes import ADAPTERS, RuntimeAdapter, adapter_for


@dataclass
class Replay:
    """What the replay command's own tasks learn before its campaign."""

    args: argparse.Namespace
    store: Optional[ArtifactStore] = None
    manifests: Dict[str, Manifest] = field(default_factory=dict)  # by job id
    jobs: List[GraphJob] = field(default_factory=list)
    adapter: Optional[RuntimeAdapter] = None
    judged_at_export: int = 0  # graphs whose exporting cell already ran them in this very runtime


def replay_command(args: argparse.Namespace) -> int:
    return pipeline(Replay(args), (load, discover, select, ReplayKind.of, conduct))


def load(r: Replay) -> Replay:
    """The stored graphs the selection names; each static fp32 graph of a real model (tag `model`) also at each
    runtime precision asked for (the precision a runtime computes at does not depend on the shape mode)."""
    r.store = ArtifactStore(artifacts_dir(r.args))
    at_runtime = [p for p in r.args.precision if p in RUNTIME_PRECISIONS]
    for manifest in stored_graphs(r.store):
        if not _selected(manifest, r.args):
            continue
        precisions = [manifest.precision] if not r.args.precision or manifest.precision in r.args.precision else []
        record = manifest.record
        if manifest.precision == "fp32" and "model" in manifest.tags and record.get("shape_mode") == "static":
            precisions += at_runtime
        for precision in precisions:
            job = graph_job(r.store, manifest, precision)
            r.manifests[job.cell_id] = manifest
            r.jobs.append(job)
    if not r.jobs:
        raise UserError(
            f"no stored graph under {r.store.root} matches the selection; `nox -s matrix` (or `harness run`) keeps "
            "each exported graph there, or pass --artifacts DIR"
        )
    return r


def discover(r: Replay) -> Replay:
    """This environment's runtime, as installed."""
    name = r.args.runtime or os.environ.get("HARNESS_RUNTIME")
    if not name:
        raise UserError("name this runtime environment: --runtime NAME (nox's replay session passes it)")
    if len(r.args.device) != 1:
        raise UserError(f"--device {','.join(r.args.device)}: a replay judges on one device; pass --device cpu or cuda")
    kind = r.args.runtime_kind or os.environ.get("HARNESS_RUNTIME_KIND") or _installed_kind()
    r.adapter = adapter_for(kind, name, r.args.device[0])
    return r


def select(r: Replay) -> Replay:
    """Leave out the graphs their exporting cell already judged in this very runtime; keep this machine's shard."""
    mine = (r.adapter.name, r.adapter.version)
    runtime_of = {j: (m.record.get("runtime") or {}) for j, m in r.manifests.items()}
    same = [
        j
        for j in r.jobs
        if j.precision == "fp32"  # a converted graph was never run by its exporting environment
        and (runtime_of[j.cell_id].get("name"), runtime_of[j.cell_id].get("version")) == mine
    ]
    r.judged_at_export = len(same)
    shard = parse_shard(r.args.shard)
    r.jobs = [j for j in r.jobs if j not in same and in_shard(j.cell, shard)]
    return r


@dataclass
class ReplayKind(Kind):
    """Stored graphs judged in this runtime environment, one worker process (one runtime load) per core."""

    replay: Optional[Replay] = None
    _default: Optional[str] = None  # what runtime-default is judged as (_as_judged)
    noun = "graph"

    @classmethod
    def of(cls, r: Replay) -> ReplayKind:
        out = results_path(r.args, RecordKind.REPLAY, r.adapter.env_name, parse_shard(r.args.shard))
        return cls(r.args, list(r.jobs), out, r.adapter.env_name, code_hash(only=REPLAY_CODE), r)

    def key(self, job: GraphJob) -> Key:
        manifest = self.replay.manifests[job.cell_id]
        return resume_key(job.cell_id, (manifest.digest, self.replay.adapter.describe()), code=self.code)

    def record_key(self, record: CellRecord) -> Optional[Key]:
        depends_on = (record.artifact, record.runtime)
        return resume_key(
            job_id(record.env, record.cell_id, record.precision), depends_on, record.harness_version, record.code_hash
        )

    def twin_key(self, job: GraphJob) -> Optional[str]:
        return judgement_key(self.replay.store, self.replay.manifests[job.cell_id], self._as_judged(job.precision))

    def _as_judged(self, precision: str) -> str:
        """runtime-default is the runtime precision this device picks (OpenVINO on a bf16 CPU: runtime-bf16), where
        that is one of this replay's: one compilation answers both."""
        if precision != RUNTIME_DEFAULT:
            return precision
        if self._default is None:
            hint = self.replay.adapter.default_hint()
            chosen = f"runtime-{hint}"
            self._default = chosen if hint and chosen in self.args.precision else precision
        return self._default

    def blank(self, job: GraphJob, verdict: Verdict, reason: Optional[str]) -> CellRecord:
        return replay_blank(self.replay.manifests[job.cell_id], self.replay.adapter, verdict, reason, job.precision)

    def worker(self) -> WorkerConfig:
        adapter = self.replay.adapter
        extra = ("--runtime-kind", adapter.name, "--device", adapter.device)
        return WorkerConfig.from_args(
            self.args, self.name, worker_log(self.out), module="harness.replay.worker", extra=extra
        )

    def announce(self, resumed: int, todo: int) -> str:
        adapter = self.replay.adapter
        head = f"{self.name}: {adapter.name} {adapter.version}; {len(self.jobs)} stored graphs"
        return f"{head}, {resumed} already in {self.out}, {todo} to judge; {self._judged_at_export_line()}"

    def summary(self) -> List[str]:
        return [self._judged_at_export_line()]

    def _judged_at_export_line(self) -> str:
        own = f"{self.replay.adapter.name} {self.replay.adapter.version}"
        return f"{self.replay.judged_at_export} graphs left out: their exporting environment's own {own} judged them"


def _selected(manifest: Manifest, args: argparse.Namespace) -> bool:
    record = manifest.record
    wanted = (("env", args.from_env), ("case", args.case), ("family", args.family), ("strategy", args.strategy))
    skipped = set(getattr(args, "skip_tag", ())) & set(manifest.tags)
    return not skipped and all(not names or record.get(key) in names for key, names in wanted)


def _installed_kind() -> str:
    from importlib import util

    kinds = [k for k, module in (("onnxruntime", "onnxruntime"), ("openvino", "openvino")) if util.find_spec(module)]
    if len(kinds) != 1:
        raise UserError(
            f"this Python has {' and '.join(kinds) or 'no runtime'}: pass --runtime-kind ({', '.join(ADAPTERS)})"
        )
    return kinds[0]
