"""`python -m harness run` as a chain of small steps, nox-style: each takes the run so far and fills in its part;
one that returns an int ends the chain with that exit code.

load -> discover -> expand -> drop_done -> split_applicable -> execute -> summarise
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from harness import __version__
from harness.artifacts.store import ArtifactStore, folder_bytes
from harness.cli import artifacts_dir
from harness.errors import ExitCode, UserError
from harness.plan.applicable import EnvLimits, environment_limits, not_applicable_reason, split_by_limits
from harness.plan.registry import Case
from harness.plan.spec import CellSpec, Selection, expand, parse_shard, select_list
from harness.record import CellRecord, Verdict, read_results, set_aside_torn_lines
from harness.run.chain import exit_code, run_chain, until_done_or_interrupted, write_outcome
from harness.run.pool import Outcome, WorkerConfig, WorkerPool, new_run_id, now_iso
from harness.run.progress import Progress
from harness.run.selection import load_selection
from harness.run.writer import ResultsWriter, code_hash, resume_key
from harness.strategies import get_strategy, strategies_for
from harness.worker.executor import blank_record
from harness.worker.fingerprint import EnvInfo


@dataclass
class Run:
    """Everything the steps of one run learn, in the order they learn it."""

    args: argparse.Namespace
    cases: Dict[str, Case] = field(default_factory=dict)
    selection: Selection = field(default_factory=Selection)
    env: Optional[EnvInfo] = None
    limits: Optional[EnvLimits] = None
    beyond: Dict[str, int] = field(default_factory=dict)  # cells the environment cannot do, per limit
    cuda_reason: Optional[str] = None
    cells: List[CellSpec] = field(default_factory=list)
    out: Path = Path("results")
    code: str = ""
    resumed: int = 0
    todo: List[CellSpec] = field(default_factory=list)
    runnable: List[CellSpec] = field(default_factory=list)
    run_id: str = ""
    writer: Optional[ResultsWriter] = None
    progress: Optional[Progress] = None
    harness_errors: int = 0
    interrupted: bool = False


Step = Callable[[Run], Optional[int]]


def run_command(args: argparse.Namespace) -> int:
    return run_chain(Run(args), STEPS)


def load(run: Run) -> Optional[int]:
    """Case files and the selection, checked against what exists."""
    run.cases, run.selection = load_selection(run.args)
    return None


def discover(run: Run) -> Optional[int]:
    """This environment as installed, and the axes it cannot do at all."""
    from harness.worker.export import dynamo_available
    from harness.worker.fingerprint import collect, default_env_name

    run.env = collect(run.args.env or default_env_name())
    run.limits = environment_limits(run.env, dynamo_available())
    return None


def within_limits(run: Run) -> None:
    """The selection's cells this environment can do, and how many each of its limits keeps out."""
    cells = list(expand(run.env.name, run.cases.values(), _strategies_of, run.selection, run.env.max_opset))
    if not cells:
        raise UserError("the selection names no cell; `python -m harness list` shows what exists")
    run.cells, run.beyond = split_by_limits(cells, run.limits)


def expand_cells(run: Run) -> Optional[int]:
    """The selection's cells within the environment's limits, and this machine's shard of them."""
    within_limits(run)
    shard = parse_shard(run.args.shard)
    run.cells = select_list(run.cells, shard)
    run.cuda_reason = _cuda_check(run.cells)
    name = run.env.name + (f".shard-{shard[0]}-of-{shard[1]}" if shard else "") + ".jsonl"
    run.out = Path(run.args.out) if run.args.out else Path(run.args.results_dir) / name
    if not run.cells:
        print(f"{run.env.name}: nothing to run: {_limits_line(run)}", file=sys.stderr)
        return ExitCode.OK
    return None


def drop_done(run: Run) -> Optional[int]:
    """Cells already measured with this spec, environment and code are kept, not run again."""
    moved, aside = set_aside_torn_lines(run.out)
    if moved:
        print(f"{run.out}: {moved} torn line(s) moved to {aside}; their cells run again", file=sys.stderr)
    run.code = code_hash(run.args.cases_dir)
    done = set() if run.args.rerun else _done_keys(run.out, _artifacts(run))
    fp_hash = run.env.fingerprint.hash()
    run.todo = [c for c in run.cells if resume_key(c.cell_id, fp_hash, __version__, run.code) not in done]
    run.resumed = len(run.cells) - len(run.todo)
    return None


def split_applicable(run: Run) -> Optional[int]:
    """Open the results file; record what a strategy or case cannot do; keep the rest to execute."""
    run.run_id = new_run_id()
    if not run.args.quiet:
        env = run.env
        print(
            f"{env.name}: torch {env.torch}, onnxruntime {env.onnxruntime}, onnx {env.fingerprint.onnx}, "
            f"mmcv {env.fingerprint.mmcv}; {len(run.cells)} cells, {run.resumed} already in {run.out}, "
            f"{len(run.todo)} to run; {_limits_line(run)}",
            file=sys.stderr,
        )
    run.writer = ResultsWriter(run.out)
    run.progress = Progress(len(run.todo), run.env.name, quiet=run.args.quiet, resumed=run.resumed)
    for cell in run.todo:
        reason = not_applicable_reason(cell, get_strategy(cell.family, cell.strategy), run.env, run.cuda_reason)
        if reason:
            record = _new_record(run, cell, Verdict.NOT_APPLICABLE, reason)
            _emit(run, Outcome(cell, record, now_iso(), 0.0), ran=False)
        else:
            run.runnable.append(cell)
    return None


def execute(run: Run) -> Optional[int]:
    """Each runnable cell in a worker process (or here, with --jobs 0); every record written as it ends."""
    config = WorkerConfig.from_args(run.args, run.env.name, run.out.with_suffix(".worker.log"))
    work = _execute_inline if run.args.jobs == 0 else _execute_in_pool
    until_done_or_interrupted(run, lambda: work(run, config))
    return None


def summarise(run: Run) -> Optional[int]:
    print(f"{run.progress.summary()}; results in {run.out}", file=sys.stderr)
    if run.beyond:
        print(f"{run.env.name}: not tried: {_limits_line(run)}", file=sys.stderr)
    store = _artifacts(run)
    if store is not None:
        print(f"{run.env.name}: {stored_line(store, run.env.name)}", file=sys.stderr)
    return exit_code(run, "finished cell")


STEPS: Sequence[Step] = (load, discover, expand_cells, drop_done, split_applicable, execute, summarise)


# Helpers of the steps ---------------------------------------------------------------------------------


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


def _limits_line(run: Run) -> str:
    """The environment's limits, each with its reason and how many selected cells it kept out."""
    said = run.limits.describe()
    parts = [f"{key} ({said[key]}): {count} cells" for key, count in sorted(run.beyond.items())]
    return "beyond this environment: " + ("; ".join(parts) if parts else "none of the selected cells")


def _artifacts(run: Run) -> Optional[ArtifactStore]:
    return None if run.args.no_artifacts else ArtifactStore(artifacts_dir(run.args))


def _done_keys(path: Path, store: Optional[ArtifactStore]) -> set:
    """Resume keys of the records already in this file; harness errors (a bug of ours) are always retried, and so
    is a cell whose graph the artifacts folder has lost (deleted, or kept by a run without artifacts)."""
    if not path.exists():
        return set()
    found = read_results(path)
    if found.refusal is not None:
        raise UserError(f"{found.refusal.line()}; or pass --out to write elsewhere")
    return {
        resume_key(r.cell_id, r.fingerprint_hash, r.harness_version, r.code_hash)
        for r in found.records
        if r.verdict != Verdict.HARNESS_ERROR and (store is None or not _lost_graph(r, store))
    }


def _lost_graph(record: CellRecord, store: ArtifactStore) -> bool:
    exported = any(s.name == "export" and s.outcome == "ok" for s in record.stages)
    return exported and not (record.artifact and store.has(record.env, record.cell_id))


def _new_record(run: Run, cell: CellSpec, verdict: Verdict, reason: Optional[str]) -> CellRecord:
    return blank_record(cell, run.cases[cell.case], run.env.fingerprint, verdict, reason)


def _emit(run: Run, outcome: Outcome, ran: bool) -> None:
    write_outcome(run, outcome, ran, env_limits=run.limits.describe())


def _execute_in_pool(run: Run, config: WorkerConfig) -> None:
    pool = WorkerPool(config, size=max(1, run.args.jobs), make_record=lambda c, v, r: _new_record(run, c, v, r))
    pool.run(run.runnable, lambda o: _emit(run, o, ran=True), lambda c: run.progress.started(c.label()))


def _execute_inline(run: Run, config: WorkerConfig) -> None:
    from harness.worker.executor import CellExecutor

    executor = CellExecutor(config.env_name, config.cases_dirs, config.options)
    for cell in run.runnable:
        run.progress.started(cell.label())
        started, t0 = now_iso(), time.monotonic()
        record = executor.answer(cell)
        _emit(run, Outcome(cell, record, started, time.monotonic() - t0), ran=True)


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
