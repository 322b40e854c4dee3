"""`python -m harness diverge`: where each mismatch first goes wrong, in two campaigns of the shared steps.

    --phase trace   in a trusted runtime's environment: each graph it is trusted for, run with every intermediate
                    exposed on the mismatching input sets; the tensors stored beside the graph (results/trace-R.jsonl)
    --phase locate  in the mismatching runtime's environment: each of its mismatches run the same way and compared,
                    tensor by tensor in the graph's order, with the trusted run (results/diverge-R.jsonl)

load -> discover -> (TraceKind | LocateKind) -> drop_done -> open_results -> decide -> share -> execute
-> summarise
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from harness.artifacts.store import ArtifactStore, Manifest
from harness.campaign.chain import Kind, conduct, pipeline
from harness.campaign.files import results_path, worker_log
from harness.campaign.flags import artifacts_dir
from harness.campaign.keys import REPLAY_CODE, Key, code_hash, in_shard, parse_shard, resume_key
from harness.campaign.pool import WorkerConfig
from harness.diverge.jobs import Mismatch, planned
from harness.diverge.locate import divergence_blank, trace_blank
from harness.diverge.trace import TRACES
from harness.errors import ExitCode, UserError
from harness.record import CellRecord, Divergence, RecordKind, Verdict, job_id
from harness.replay.runtimes import RuntimeAdapter, adapter_for

DIVERGE_CODE = REPLAY_CODE + ("diverge",)


@dataclass(frozen=True)
class DivergeJob:
    """A graph to trace (the trusted side) or a mismatch to locate: what the pool sends a diverge worker."""

    job: str  # the graph's job id (env/cell[@precision])
    cell: str  # the exporting cell's id: the shard test's
    body: Dict[str, Any] = field(hash=False, compare=False)
    text: str = ""

    @property
    def cell_id(self) -> str:
        return self.job

    def to_dict(self) -> Dict[str, Any]:
        return self.body

    def label(self) -> str:
        return self.text


@dataclass
class Diverge:
    args: argparse.Namespace
    adapter: Optional[RuntimeAdapter] = None
    store: Optional[ArtifactStore] = None
    mine: List[Mismatch] = field(default_factory=list)  # the mismatches this phase works on, here
    untrusted: int = 0
    over_budget: int = 0


def diverge_command(args: argparse.Namespace) -> int:
    if args.phase == "plan":
        return pipeline(Diverge(args), (plan,))
    kind = TraceKind.of if args.phase == "trace" else LocateKind.of
    return pipeline(Diverge(args), (discover, load, kind, nothing_here, conduct))


def plan(d: Diverge) -> int:
    """Which runtimes have work in each phase, as one JSON line on stdout (`nox -s diverge` starts only those):
    {"trace": [[name, version], ...], "locate": [...]}."""
    found, _, _ = planned(d.args.results_dir, d.args.budget)
    phases = {"trace": sorted({m.trusted for m in found}), "locate": sorted({m.runtime for m in found})}
    print(json.dumps({phase: [list(label) for label in labels] for phase, labels in phases.items()}))
    return ExitCode.OK


def nothing_here(kind: Kind) -> Any:
    """A runtime with no job in this phase says so and writes no results file (most of the ladder, most phases)."""
    if kind.jobs:
        return kind
    print(f"{kind.name}: no {kind.noun} to make here; {'; '.join(kind.summary())}", file=sys.stderr)
    return ExitCode.OK


def discover(d: Diverge) -> Diverge:
    name = d.args.runtime or os.environ.get("HARNESS_RUNTIME") or os.environ.get("HARNESS_ENV")
    if not name:
        raise UserError("name this runtime environment: --runtime NAME (nox's diverge session passes it)")
    kind = d.args.runtime_kind or os.environ.get("HARNESS_RUNTIME_KIND") or _installed_kind()
    d.adapter = adapter_for(kind, name, "cpu")
    d.store = ArtifactStore(artifacts_dir(d.args))
    return d


def load(d: Diverge) -> Diverge:
    """The mismatches with a trusted judgement (the same list in every environment), then this phase's own here."""
    found, d.untrusted, d.over_budget = planned(d.args.results_dir, d.args.budget)
    here = (d.adapter.name, str(d.adapter.version))
    shard = parse_shard(d.args.shard)
    side = (lambda m: m.trusted == here) if d.args.phase == "trace" else (lambda m: m.runtime == here)
    d.mine = [m for m in found if side(m) and in_shard(m.record.cell_id, shard)]
    return d


def _manifest(store: ArtifactStore, env: str, cell: str, precision: str) -> Optional[Manifest]:
    path = store.folder(env, cell, precision) / "manifest.json"
    return store.read(path) if path.is_file() else None


@dataclass
class TraceKind(Kind):
    """The graphs this runtime is trusted for, each traced once on the input sets its mismatches need."""

    diverge: Optional[Diverge] = None
    manifests: Dict[str, Manifest] = field(default_factory=dict)
    noun = "trace"

    @classmethod
    def of(cls, d: Diverge) -> TraceKind:
        manifests: Dict[str, Manifest] = {}
        for m in d.mine:
            manifest = _manifest(d.store, m.record.env, m.record.cell_id, m.trusted_precision)
            if manifest is not None:
                manifests[m.trusted_graph] = manifest
        jobs = [DivergeJob(j, manifests[j].cell_id, {"graph": j}, j) for j in sorted(manifests)]
        out = results_path(d.args, RecordKind.TRACE, d.adapter.env_name, parse_shard(d.args.shard))
        return cls(d.args, jobs, out, d.adapter.env_name, code_hash(only=DIVERGE_CODE), d, manifests)

    def key(self, job: DivergeJob) -> Key:
        return resume_key(job.job, (self.manifests[job.job].digest, self.diverge.adapter.describe()), code=self.code)

    def record_key(self, record: CellRecord) -> Optional[Key]:
        """A trace whose stored runs the artifacts folder has lost is made again."""
        manifest = self.manifests.get(job_id(record.env, record.cell_id, record.precision))
        if record.verdict == Verdict.PASS and (manifest is None or not stored_runs(self.diverge.store, manifest)):
            return None
        graph = job_id(record.env, record.cell_id, record.precision)
        return resume_key(graph, (record.artifact, record.runtime), record.harness_version, record.code_hash)

    def blank(self, job: DivergeJob, verdict: Verdict, reason: Optional[str]) -> CellRecord:
        return trace_blank(self.manifests[job.job], self.diverge.adapter, verdict, reason)

    def worker(self) -> WorkerConfig:
        return _worker(self, "trace")

    def summary(self) -> List[str]:
        return _summary(self.diverge, f"{len(self.jobs)} graphs to trace for them")


@dataclass
class LocateKind(Kind):
    """This runtime's mismatches, each located against its trusted run."""

    diverge: Optional[Diverge] = None
    by_job: Dict[str, Mismatch] = field(default_factory=dict)
    noun = "divergence"

    @classmethod
    def of(cls, d: Diverge) -> LocateKind:
        by_job = {m.graph: m for m in d.mine}
        jobs = [
            DivergeJob(j, m.record.cell_id, _locate_body(m), f"{j} vs {m.trusted[0]} {m.trusted[1]}")
            for j, m in by_job.items()
        ]
        out = results_path(d.args, RecordKind.DIVERGENCE, d.adapter.env_name, parse_shard(d.args.shard))
        return cls(d.args, jobs, out, d.adapter.env_name, code_hash(only=DIVERGE_CODE), d, by_job)

    def key(self, job: DivergeJob) -> Key:
        m = self.by_job[job.job]
        return resume_key(job.job, (m.record.artifact, f"{m.trusted[0]} {m.trusted[1]}", m.stages), code=self.code)

    def record_key(self, record: CellRecord) -> Optional[Key]:
        if record.divergence is None:
            return None
        m = self.by_job.get(job_id(record.env, record.cell_id, record.precision))
        stages = m.stages if m is not None else ()
        depends = (record.artifact, record.divergence.trusted, stages)
        return resume_key(
            job_id(record.env, record.cell_id, record.precision), depends, record.harness_version, record.code_hash
        )

    def blank(self, job: DivergeJob, verdict: Verdict, reason: Optional[str]) -> CellRecord:
        m = self.by_job[job.job]
        return divergence_blank(
            m.record, Divergence(f"{m.trusted[0]} {m.trusted[1]}", m.trusted_precision), verdict, reason
        )

    def worker(self) -> WorkerConfig:
        return _worker(self, "locate")

    def summary(self) -> List[str]:
        return _summary(self.diverge, f"{len(self.jobs)} of them judged here")


def _locate_body(m: Mismatch) -> Dict[str, Any]:
    return {
        "mismatch": m.record.to_json(),
        "trusted": list(m.trusted),
        "trusted_precision": m.trusted_precision,
        "stages": list(m.stages),
    }


def _worker(kind: Kind, phase: str) -> WorkerConfig:
    adapter = kind.diverge.adapter  # type: ignore[attr-defined]
    extra = ("--runtime-kind", adapter.name, "--phase", phase)
    return WorkerConfig.from_args(
        kind.args, kind.name, worker_log(kind.out), module="harness.diverge.worker", extra=extra
    )


def _summary(d: Diverge, mine: str) -> List[str]:
    lines = [f"mismatches with a trusted judgement: {mine}; {d.untrusted} mismatches have none (no divergence)"]
    if d.over_budget:
        lines.append(f"{d.over_budget} mismatches left out by --budget {d.args.budget}; raise it to locate them too")
    return lines


def stored_runs(store: ArtifactStore, manifest: Manifest) -> bool:
    return (store.folder(manifest.env, manifest.cell_id, manifest.precision) / TRACES).is_dir()


def _installed_kind() -> str:
    from importlib import util

    kinds = [k for k, module in (("onnxruntime", "onnxruntime"), ("openvino", "openvino")) if util.find_spec(module)]
    if len(kinds) != 1:
        raise UserError(
            f"this Python has {' and '.join(kinds) or 'no runtime'}: pass --runtime-kind onnxruntime|openvino"
        )
    return kinds[0]
