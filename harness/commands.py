"""The `run` and `list` commands: load -> discover -> expand -> plan -> run -> summarise."""

from __future__ import annotations

import datetime
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from harness import __version__
from harness.cli import EXIT_HARNESS_ERROR, EXIT_INTERRUPTED, EXIT_OK
from harness.errors import UserError
from harness.progress import Progress
from harness.registry import Case, get_case, load_cases
from harness.results import ResultsWriter, code_hash, done_keys, resume_key
from harness.spec import CellSpec, Selection, expand, parse_shard, select_list

KNOWN = {
    "exporter": ("torchscript", "dynamo"),
    "shape_mode": ("static", "dynamic"),
    "device": ("cpu", "cuda"),
    "dtype": ("float32", "float16", "bfloat16", "float64"),
}


def selection_from(args: Any) -> Selection:
    for key, allowed in KNOWN.items():
        for value in getattr(args, key):
            if value not in allowed:
                flag = "--" + key.replace("_", "-")
                raise UserError(f"{flag} {value}: unknown; use one of {', '.join(allowed)}")
    return Selection(
        cases=tuple(args.case),
        families=tuple(args.family),
        strategies=tuple(args.strategy),
        opsets=tuple(args.opset),
        exporters=tuple(args.exporter),
        shape_modes=tuple(args.shape_mode),
        devices=tuple(args.device),
        dtypes=tuple(args.dtype),
        tags=tuple(args.tag),
    )


def discover(args: Any) -> Tuple[List[Case], Selection]:
    cases = load_cases(args.cases_dir)
    selection = selection_from(args)
    for name in selection.cases:
        get_case(name)
    from harness.strategies import families, strategies_for

    fams = set(families())
    for fam in selection.families:
        if fam not in fams:
            raise UserError(f"--family {fam}: unknown; known families: {', '.join(sorted(fams))}")
    known_strategies = {s.name for f in fams for s in strategies_for(f)}
    for name in selection.strategies:
        if name not in known_strategies:
            raise UserError(f"--strategy {name}: unknown; known: {', '.join(sorted(known_strategies))}")
    return cases, selection


def env_name(args: Any) -> str:
    from harness.fingerprint import default_env_name

    return args.env or default_env_name()


def plan_cells(args: Any) -> Tuple[Any, List[CellSpec], Dict[str, Case]]:
    from harness.fingerprint import collect
    from harness.strategies import strategies_for

    cases, selection = discover(args)
    env = collect(env_name(args))
    cells = list(expand(env.name, cases, strategies_for, selection, env.max_opset))
    if not cells:
        raise UserError("the selection names no cell; `python -m harness list` shows what exists")
    return env, cells, {c.name: c for c in cases}


def run_command(args: Any) -> int:
    from harness.export import dynamo_available
    from harness.pipeline import Options
    from harness.plan import not_applicable_reason
    from harness.runner import WorkerConfig, WorkerPool, make_record, now_iso
    from harness.strategies import get_strategy

    env, cells, cases = plan_cells(args)
    shard = parse_shard(args.shard)
    cells = select_list(cells, shard)
    cuda_reason = _cuda_check(cells)
    out = (
        Path(args.out)
        if args.out
        else Path(args.results_dir) / (env.name + (f".shard-{shard[0]}-of-{shard[1]}" if shard else "") + ".jsonl")
    )
    done = set() if args.rerun else done_keys(out)
    fp_hash, code = env.fingerprint_hash(), code_hash(args.cases_dir)
    todo = [c for c in cells if resume_key(c.cell_id, fp_hash, __version__, code) not in done]
    skipped = len(cells) - len(todo)
    run_id = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:4]
    if not args.quiet:
        print(
            f"{env.name}: torch {env.torch}, onnxruntime {env.onnxruntime}, onnx {env.onnx}, mmcv {env.mmcv}; "
            f"{len(cells)} cells, {skipped} already in {out}, {len(todo)} to run",
            file=sys.stderr,
        )

    writer = ResultsWriter(out)
    progress = Progress(len(todo), env.name, quiet=args.quiet, resumed=skipped)
    dynamo_reason = dynamo_available()
    harness_errors = 0

    def emit(cell: CellSpec, body: Dict[str, Any], started: str, wall: float, ran: bool) -> None:
        nonlocal harness_errors
        strategy = get_strategy(cell.family, cell.strategy)
        record = make_record(cell, body, env, strategy.portability, cases[cell.case].tags, run_id, started, wall)
        record["code_hash"] = code
        writer.write(record)
        progress.finished(record["verdict"], wall, ran)
        harness_errors += record["verdict"] == "harness_error"

    runnable = []
    for cell in todo:
        reason = not_applicable_reason(
            cell, cases[cell.case], get_strategy(cell.family, cell.strategy), env, dynamo_reason, cuda_reason
        )
        if reason:
            emit(cell, {"verdict": "not_applicable", "reason": reason, "stages": []}, now_iso(), 0.0, False)
        else:
            runnable.append(cell)

    config = WorkerConfig(
        env=env.name,
        options=Options(
            threads=args.threads,
            latency=not args.no_latency,
            memory=not args.no_memory,
            latency_budget_s=args.latency_budget,
            tensorrt=args.tensorrt,
        ),
        cases_dirs=args.cases_dir,
        memory_limit_mb=args.memory_limit_mb,
        timeout_s=args.timeout,
        log_path=out.with_suffix(".worker.log"),
    )
    interrupted = False
    try:
        if args.jobs == 0:
            _run_inline(runnable, config, emit, progress)
        else:
            WorkerPool(config, size=max(1, args.jobs)).run(
                runnable,
                lambda o: emit(o.cell, o.body, o.started_at, o.wall_s, True),
                lambda c: progress.started(c.label()),
            )
    except KeyboardInterrupt:
        interrupted = True
    finally:
        writer.close()
        progress.close()
    print(progress.summary() + f"; results in {out}", file=sys.stderr)
    if interrupted:
        print("interrupted: every finished cell is saved; run the same command again to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_HARNESS_ERROR if harness_errors else EXIT_OK


def _cuda_check(cells: List[CellSpec]) -> Optional[str]:
    """No GPU at all: stop at once. A GPU this torch cannot drive: its cells are not applicable."""
    if not any(c.device == "cuda" for c in cells):
        return None
    import torch

    from harness.ortsession import cuda_unavailable_reason

    if not torch.cuda.is_available():
        if os.path.exists("/proc/driver/nvidia/version"):
            return f"torch {torch.__version__} (CUDA {torch.version.cuda}) cannot use the NVIDIA GPU of this machine"
        raise UserError(
            f"--device cuda: torch {torch.__version__} sees no CUDA device here; run it on a machine with an "
            "NVIDIA GPU and a CUDA build of torch, or drop --device cuda"
        )
    return cuda_unavailable_reason(torch)


def _run_inline(cells: List[CellSpec], config: Any, emit: Any, progress: Progress) -> None:
    from harness.execute import CellExecutor
    from harness.runner import now_iso

    executor = CellExecutor(config.env, config.cases_dirs, config.options)
    for cell in cells:
        progress.started(cell.label())
        started, t0 = now_iso(), time.monotonic()
        body = executor.execute(cell.to_dict())
        emit(cell, body, started, time.monotonic() - t0, True)


def list_command(args: Any) -> int:
    from harness.strategies import PORTABILITY_LABELS, strategies_for

    if args.cells:
        env, cells, _ = plan_cells(args)
        for cell in cells:
            print(cell.label())
        print(f"{len(cells)} cells in {env.name}", file=sys.stderr)
        return EXIT_OK
    cases, selection = discover(args)
    for case in cases:
        if selection.cases and case.name not in selection.cases:
            continue
        print(
            f"{case.family}/{case.name}: {case.description} [{len(case.params)} params; "
            f"exporters {','.join(case.exporters)}; shapes {','.join(case.shape_modes)}; tags {','.join(case.tags)}]"
        )
    print()
    seen = set()
    for case in cases:
        if case.family in seen:
            continue
        seen.add(case.family)
        for s in strategies_for(case.family):
            print(f"{s.family}/{s.name}: {s.summary} ({PORTABILITY_LABELS[s.portability]})")
    return EXIT_OK
