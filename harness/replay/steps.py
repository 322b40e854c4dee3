"""`python -m harness replay` as a chain of small steps, like `harness run`: each takes the replay so far and fills
in its part; one that returns an int ends the chain with that exit code.

load -> discover -> expand -> drop_done -> execute -> summarise
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from harness import __version__
from harness.artifacts.store import ArtifactError, ArtifactStore, Manifest
from harness.cli import artifacts_dir, pinned_cpus
from harness.errors import UserError
from harness.plan.spec import parse_shard
from harness.record import CellRecord, Verdict, read_results, set_aside_torn_lines
from harness.replay.judge import replay_blank
from harness.replay.runtimes import ADAPTERS, RuntimeAdapter, adapter_for
from harness.run.chain import exit_code, run_chain, until_done_or_interrupted, write_outcome
from harness.run.pool import WorkerConfig, WorkerPool, new_run_id
from harness.run.progress import Progress
from harness.run.writer import REPLAY_CODE, ResultsWriter, code_hash
from harness.worker.options import Options


@dataclass(frozen=True)
class ReplayJob:
    """One stored graph to judge: what the pool sends a replay worker."""

    manifest: str
    env: str
    cell: str  # the exporting cell's id
    precision: str
    text: str

    @property
    def cell_id(self) -> str:
        return job_id(self.env, self.cell, self.precision)

    def to_dict(self) -> Dict[str, Any]:
        return {"manifest": self.manifest}

    def label(self) -> str:
        return self.text


@dataclass
class Replay:
    """Everything the steps of one replay learn, in the order they learn it."""

    args: argparse.Namespace
    store: Optional[ArtifactStore] = None
    manifests: Dict[str, Manifest] = field(default_factory=dict)  # by job id
    unreadable: List[str] = field(default_factory=list)
    adapter: Optional[RuntimeAdapter] = None
    jobs: List[ReplayJob] = field(default_factory=list)
    judged_at_export: int = 0  # graphs whose exporting cell already ran them in this very runtime
    out: Path = Path("results")
    code: str = ""
    resumed: int = 0
    todo: List[ReplayJob] = field(default_factory=list)
    run_id: str = ""
    writer: Optional[ResultsWriter] = None
    progress: Optional[Progress] = None
    harness_errors: int = 0
    interrupted: bool = False


Step = Callable[[Replay], Optional[int]]


def replay_command(args: argparse.Namespace) -> int:
    return run_chain(Replay(args), STEPS)


def load(r: Replay) -> Optional[int]:
    """The stored graphs the selection names; an unreadable manifest is named and skipped, never fatal."""
    r.store = ArtifactStore(artifacts_dir(r.args))
    for path in r.store.manifests():
        try:
            manifest = r.store.read(path)
        except ArtifactError as exc:
            r.unreadable.append(str(exc))
            continue
        if _selected(manifest, r.args):
            label = _label(manifest.record) + ("" if manifest.precision == "fp32" else f" {manifest.precision}")
            job = ReplayJob(str(path), manifest.env, manifest.cell_id, manifest.precision, label)
            r.manifests[job.cell_id] = manifest
            r.jobs.append(job)
    for line in r.unreadable:
        print(f"skipped: {line}", file=sys.stderr)
    if not r.jobs:
        raise UserError(
            f"no stored graph under {r.store.root} matches the selection; `nox -s matrix` (or `harness run`) keeps "
            "each exported graph there, or pass --artifacts DIR"
        )
    return None


def discover(r: Replay) -> Optional[int]:
    """This environment's runtime, as installed."""
    name = r.args.runtime or os.environ.get("HARNESS_RUNTIME")
    if not name:
        raise UserError("name this runtime environment: --runtime NAME (nox's replay session passes it)")
    kind = r.args.runtime_kind or os.environ.get("HARNESS_RUNTIME_KIND") or _installed_kind()
    r.adapter = adapter_for(kind, name, r.args.device)
    return None


def expand(r: Replay) -> Optional[int]:
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
    r.jobs = [j for j in r.jobs if j not in same and (shard is None or int(j.cell, 16) % shard[1] == shard[0] - 1)]
    name = f"replay-{r.adapter.env_name}" + (f".shard-{shard[0]}-of-{shard[1]}" if shard else "") + ".jsonl"
    r.out = Path(r.args.out) if r.args.out else Path(r.args.results_dir) / name
    return None


def drop_done(r: Replay) -> Optional[int]:
    """Graphs already judged here, unchanged, by this runtime and this replay code, are kept."""
    moved, aside = set_aside_torn_lines(r.out)
    if moved:
        print(f"{r.out}: {moved} torn line(s) moved to {aside}; their graphs are judged again", file=sys.stderr)
    r.code = code_hash(only=REPLAY_CODE)
    runtime = r.adapter.describe()
    done = set() if r.args.rerun else _done_keys(r.out)
    r.todo = [j for j in r.jobs if _key(j.cell_id, r.manifests[j.cell_id].digest, runtime, r.code) not in done]
    r.resumed = len(r.jobs) - len(r.todo)
    return None


def execute(r: Replay) -> Optional[int]:
    """Each graph in a replay worker process; every record written as it ends."""
    r.run_id = new_run_id()
    if not r.args.quiet:
        print(
            f"{r.adapter.env_name}: {r.adapter.name} {r.adapter.version}; {len(r.jobs)} stored graphs, "
            f"{r.resumed} already in {r.out}, {len(r.todo)} to judge; {_judged_at_export_line(r)}",
            file=sys.stderr,
        )
    r.writer = ResultsWriter(r.out)
    r.progress = Progress(len(r.todo), r.adapter.env_name, quiet=r.args.quiet, resumed=r.resumed)
    pool = WorkerPool(_config(r), size=max(1, r.args.jobs), make_record=lambda j, v, why: _blank(r, j, v, why))
    until_done_or_interrupted(
        r, lambda: pool.run(r.todo, lambda o: write_outcome(r, o), lambda j: r.progress.started(j.label()))
    )
    return None


def summarise(r: Replay) -> Optional[int]:
    print(f"{r.progress.summary()}; results in {r.out}", file=sys.stderr)
    print(f"{r.adapter.env_name}: {_judged_at_export_line(r)}", file=sys.stderr)
    return exit_code(r, "judged graph")


STEPS: Sequence[Step] = (load, discover, expand, drop_done, execute, summarise)


# Helpers of the steps ---------------------------------------------------------------------------------


def job_id(env: str, cell: str, precision: str) -> str:
    return f"{env}/{cell}" + ("" if precision == "fp32" else f"@{precision}")


def _selected(manifest: Manifest, args: argparse.Namespace) -> bool:
    record = manifest.record
    wanted = (("env", args.from_env), ("case", args.case), ("family", args.family), ("strategy", args.strategy))
    chosen = all(not names or record.get(key) in names for key, names in wanted)
    return chosen and (not args.precision or manifest.precision in args.precision)


def _label(record: Dict[str, Any]) -> str:
    return f"{record.get('env')} {record.get('case')} {record.get('strategy')} opset {record.get('opset')}"


def _installed_kind() -> str:
    from importlib import util

    kinds = [k for k, module in (("onnxruntime", "onnxruntime"), ("openvino", "openvino")) if util.find_spec(module)]
    if len(kinds) != 1:
        raise UserError(
            f"this Python has {' and '.join(kinds) or 'no runtime'}: pass --runtime-kind ({', '.join(ADAPTERS)})"
        )
    return kinds[0]


def _judged_at_export_line(r: Replay) -> str:
    own = f"{r.adapter.name} {r.adapter.version}"
    return f"{r.judged_at_export} graphs left out: their exporting environment's own {own} judged them"


def _key(job_id: str, digest: str, runtime: Any, code: str) -> Tuple[Any, ...]:
    return (job_id, digest, runtime, f"{__version__}+{code}")


def _done_keys(path: Path) -> set:
    if not path.exists():
        return set()
    found = read_results(path)
    if found.refusal is not None:
        raise UserError(f"{found.refusal.line()}; or pass --out to write elsewhere")
    return {
        (
            job_id(rec.env, rec.cell_id, rec.precision),
            rec.artifact,
            rec.runtime,
            f"{rec.harness_version}+{rec.code_hash}",
        )
        for rec in found.records
        if rec.verdict != Verdict.HARNESS_ERROR
    }


def _config(r: Replay) -> WorkerConfig:
    args = r.args
    options = Options(
        threads=args.threads,
        latency=not args.no_latency,
        memory=not args.no_memory,
        latency_budget_s=args.latency_budget,
        artifacts_dir=str(r.store.root.resolve()),
    )
    return WorkerConfig(
        env_name=r.adapter.env_name,
        options=options,
        memory_limit_mb=args.memory_limit_mb,
        timeout_s=args.timeout,
        log_path=r.out.with_suffix(".worker.log"),
        module="harness.replay.worker",
        cpus=pinned_cpus(args),
        extra=("--runtime-kind", r.adapter.name, "--device", r.adapter.device),
    )


def _blank(r: Replay, job: ReplayJob, verdict: Verdict, reason: Optional[str]) -> CellRecord:
    return replay_blank(r.manifests[job.cell_id], r.adapter, verdict, reason)
