"""`python -m harness run`: the export campaign. Its own tasks find the cells; the shared steps
(harness.campaign.chain) run them.

load -> discover -> expand_cells -> ExportKind -> drop_done -> open_results -> decide -> share -> execute
-> summarise
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

from harness.artifacts.store import ArtifactStore, folder_bytes
from harness.campaign.chain import Kind, conduct, pipeline
from harness.campaign.files import results_path, worker_log
from harness.campaign.flags import artifacts_dir
from harness.campaign.keys import Key, code_hash, in_shard, parse_shard, resume_key
from harness.campaign.pool import WorkerConfig
from harness.errors import ExitCode, UserError
from harness.plan.applicable import EnvLimits, environment_limits, not_applicable_reason, split_by_limits
from harness.plan.blank import blank_record
from harness.plan.registry import Case
from harness.plan.spec import CellSpec, Selection, expand
from harness.record import CellRecord, EnvInfo, Fingerprint, RecordKind, Verdict, default_env_name
from harness.run.requirements import Resolved, load_plan, resolve_cases
from harness.run.selection import load_selection
from harness.strategies import get_strategy, strategies_for


@dataclass
class Run:
    """What the export command's own tasks learn before its campaign: the cases, the environment, the cells."""

    args: argparse.Namespace
    cases: Dict[str, Case] = field(default_factory=dict)
    selection: Selection = field(default_factory=Selection)
    env: Optional[EnvInfo] = None
    limits: Optional[EnvLimits] = None
    beyond: Dict[str, int] = field(default_factory=dict)  # cells the environment cannot do, per limit
    left_out: int = 0  # cells left for later (--without mmcv)
    cells: List[CellSpec] = field(default_factory=list)
    requirements: Dict[str, Resolved] = field(default_factory=dict)  # case -> its requires as resolved here


def run_command(args: argparse.Namespace) -> int:
    return pipeline(Run(args), (load, discover, expand_cells, ExportKind.of, conduct))


def load(run: Run) -> Run:
    """Case files and the selection, checked against what exists."""
    run.cases, run.selection = load_selection(run.args)
    run.requirements = resolve_cases(run.cases.values(), load_plan(getattr(run.args, "requirements_plan", None)))
    return run


def discover(run: Run) -> Run:
    """This environment as installed, and the axes it cannot do at all."""
    from harness.worker.export import dynamo_available
    from harness.worker.fingerprint import collect

    run.env = collect(run.args.env or default_env_name())
    run.limits = environment_limits(run.env, dynamo_available())
    return run


def within_limits(run: Run) -> None:
    """The selection's cells this environment can do, and how many each of its limits keeps out."""
    cells = list(expand(run.env.name, run.cases.values(), _strategies_of, run.selection, run.env.max_opset))
    if not cells:
        raise UserError("the selection names no cell; `python -m harness list` shows what exists")
    run.cells, run.beyond = split_by_limits(cells, run.limits)


def expand_cells(run: Run) -> Union[Run, int]:
    """The selection's cells within the environment's limits, this machine's shard of them, less those that need a
    package left for later (--without)."""
    within_limits(run)
    shard = parse_shard(run.args.shard)
    cells = [c for c in run.cells if in_shard(c.cell_id, shard)]
    run.cells = [c for c in cells if not set(get_strategy(c.family, c.strategy).needs) & set(run.args.without)]
    run.left_out = len(cells) - len(run.cells)
    if not run.cells:
        print(f"{run.env.name}: nothing to run: {limits_line(run)}", file=sys.stderr)
        return ExitCode.OK
    return run


def limits_line(run: Run) -> str:
    """The environment's limits, each with its reason and how many selected cells it kept out."""
    said = run.limits.describe()
    parts = [f"{key} ({said[key]}): {count} cells" for key, count in sorted(run.beyond.items())]
    return "beyond this environment: " + ("; ".join(parts) if parts else "none of the selected cells")


@dataclass
class ExportKind(Kind):
    """Cells exported and judged in this environment, one worker process (one torch import) per core."""

    run: Optional[Run] = None
    store: Optional[ArtifactStore] = None
    cuda_reason: Optional[str] = None
    noun = "cell"

    @classmethod
    def of(cls, run: Run) -> ExportKind:
        args = run.args
        out = results_path(args, RecordKind.EXPORT, run.env.name, parse_shard(args.shard))
        store = None if args.no_artifacts else ArtifactStore(artifacts_dir(args))
        code = code_hash(args.cases_dir)
        return cls(args, list(run.cells), out, run.env.name, code, run, store, _cuda_check(run.cells))

    def fingerprint(self, case: str) -> Fingerprint:
        """The environment's, with the versions a case's requirements resolved to here."""
        resolved = self.run.requirements.get(case)
        fingerprint = self.run.env.fingerprint
        return fingerprint.with_packages(resolved.packages) if resolved and not resolved.reason else fingerprint

    def key(self, job: CellSpec) -> Key:
        strategy = get_strategy(job.family, job.strategy)
        return resume_key(job.cell_id, self.fingerprint(job.case).hash(strategy.leaves_out()), code=self.code)

    def record_key(self, record: CellRecord) -> Optional[Key]:
        """A cell whose graph the artifacts folder has lost (deleted, or kept by a run without artifacts) runs again."""
        if self.store is not None and _lost_graph(record, self.store):
            return None
        try:
            leaves_out = get_strategy(record.family, record.strategy).leaves_out()
        except UserError:  # a strategy this harness no longer has
            return None
        return resume_key(record.cell_id, record.fingerprint.hash(leaves_out), record.harness_version, record.code_hash)

    def blank(self, job: CellSpec, verdict: Verdict, reason: Optional[str]) -> CellRecord:
        return blank_record(job, self.run.cases[job.case], self.fingerprint(job.case), verdict, reason)

    def decided(self, job: CellSpec) -> Optional[Tuple[Verdict, str]]:
        resolved = self.run.requirements.get(job.case)
        if resolved and resolved.reason:
            return Verdict.NOT_APPLICABLE, resolved.reason
        strategy = get_strategy(job.family, job.strategy)
        reason = not_applicable_reason(job, strategy, self.run.env, self.cuda_reason)
        return (Verdict.NOT_APPLICABLE, reason) if reason else None

    def worker(self, python: str = "") -> WorkerConfig:
        where = dict(cases_dirs=tuple(self.args.cases_dir), python=python)
        return WorkerConfig.from_args(self.args, self.name, worker_log(self.out), **where)

    def worker_groups(self, jobs: List[CellSpec]) -> List[Tuple[WorkerConfig, List[CellSpec]]]:
        """This venv's cells first, then those of each venv that holds a case's requirements."""
        by_python: Dict[str, List[CellSpec]] = {}
        for job in jobs:
            resolved = self.run.requirements.get(job.case)
            by_python.setdefault((resolved.python if resolved else None) or "", []).append(job)
        return [(self.worker(python), group) for python, group in sorted(by_python.items())]

    def stamp(self) -> Dict[str, str]:
        return {"env_limits": self.run.limits.describe()}

    def announce(self, resumed: int, todo: int) -> str:
        env, fp = self.run.env, self.run.env.fingerprint
        return (
            f"{env.name}: torch {env.torch}, onnxruntime {env.onnxruntime}, onnx {fp.onnx}, mmcv {fp.mmcv}; "
            f"{super().announce(resumed, todo)}; {limits_line(self.run)}"
        )

    def summary(self) -> List[str]:
        lines = [f"not tried: {limits_line(self.run)}"] if self.run.beyond else []
        if self.run.left_out:
            lines.append(f"left for later: {self.run.left_out} cells needing {', '.join(self.args.without)}")
        if self.store is not None:
            lines.append(stored_line(self.store, self.name))
        selected = {c.case for c in self.run.cells}
        lines += [f"{case}: {r.describe()}" for case, r in sorted(self.run.requirements.items()) if case in selected]
        return lines


def stored_line(store: ArtifactStore, env_name: str) -> str:
    graphs = sum(1 for p in store.manifests() if p.parent.parent.name == env_name)
    _, env_bytes = folder_bytes(store.root / env_name)
    arrays, array_bytes = folder_bytes(store.root / "arrays")
    return (
        f"artifacts: {graphs} graphs in {store.root / env_name} ({env_bytes / 1e6:.1f} MB); "
        f"{arrays} input and output arrays shared by every environment ({array_bytes / 1e6:.1f} MB)"
    )


def _strategies_of(family: str) -> List[str]:
    return [s.name for s in strategies_for(family)]


def _lost_graph(record: CellRecord, store: ArtifactStore) -> bool:
    exported = any(s.name == "export" and s.outcome == "ok" for s in record.stages)
    return exported and not (record.artifact and store.has(record.env, record.cell_id))


def _cuda_check(cells: List[CellSpec]) -> Optional[str]:
    """No GPU at all: stop at once. A GPU this torch cannot drive: its cells are not applicable."""
    if not any(c.device == "cuda" for c in cells):
        return None
    import torch

    from harness.judge.session import cuda_unavailable_reason

    if not torch.cuda.is_available():
        if os.path.exists("/proc/driver/nvidia/version"):
            return f"torch {torch.__version__} (CUDA {torch.version.cuda}) cannot use the NVIDIA GPU of this machine"
        raise UserError(
            f"--device cuda: torch {torch.__version__} sees no CUDA device here; run it on a machine with an "
            "NVIDIA GPU and a CUDA build of torch, or drop --device cuda"
        )
    return cuda_unavailable_reason(torch)
