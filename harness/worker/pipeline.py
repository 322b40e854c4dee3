"""One cell, stage by stage, in the order of STAGES: build, eager, export, opset, check, load, run, parity,
dynamic, latency, memory.

The first stage that fails names the verdict; a fatal failure skips the stages after it, a non-fatal one (the
checker, the measurements) lets them run for the record. Each stage is one function of the cell's state.
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from harness.plan.registry import Case
from harness.plan.spec import CellSpec
from harness.record import CellRecord, ExportInfo, Parity, Stage, Verdict
from harness.strategies import Strategy
from harness.worker import parity as parity_mod
from harness.worker.costs import latency_targets, memory_targets
from harness.worker.export import check_model, describe_model, export_onnx
from harness.worker.options import Options
from harness.worker.session import OrtSession
from harness.worker.state import CellState


class StageFailed(Exception):
    """A stage's own finding (a mismatch, a drift): the verdict it names, and the message."""

    def __init__(self, verdict: Verdict, message: str) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.message = message


# The stages -----------------------------------------------------------------------------------------


def build(s: CellState) -> None:
    import torch

    torch.set_num_threads(s.opts.threads)
    s.atol, s.rtol = parity_mod.tolerance_for(s.cell.dtype, s.case.tolerance)
    s.ref_model = s.case.model(s.cell.params, s.reference.op()).eval()
    s.model = s.case.model(s.cell.params, s.strategy.op()).eval().to(device=s.cell.device, dtype=_dtype(s.cell))
    s.inputs32 = _inputs(s, s.case.shapes[0], s.cell.seed)
    s.inputs = _convert(s.inputs32, s.cell)


def eager(s: CellState) -> None:
    import torch

    s.expected = _reference_outputs(s, s.inputs32)
    with torch.no_grad(), s.routing():
        got = s.model(*s.inputs)
    result = parity_mod.compare(got, s.expected, s.atol, s.rtol)
    s.found["eager_parity"] = _parity(result)
    if not result["ok"]:
        raise StageFailed(Verdict.MISMATCH, parity_mod.describe_mismatch(result, "eager vs reference"))


def export(s: CellState) -> None:
    dynamic = s.cell.shape_mode == "dynamic"
    with s.routing():
        s.blob = export_onnx(
            s.strategy.wrap(s.model, s.cell),
            s.inputs,
            opset=s.cell.opset,
            exporter=s.cell.exporter,
            input_names=list(s.case.input_names) or [f"input{i}" for i in range(len(s.inputs))],
            output_names=s.case.output_names,
            dynamic_axes=s.case.dynamic_axes if dynamic else None,
        )


def opset(s: CellState) -> None:
    info = describe_model(s.blob)
    actual = info.pop("actual_opset")
    s.found["actual_opset"] = actual
    s.found["export"] = ExportInfo(info["nodes"], info["op_types"], tuple(info["domains"]), info["bytes"])
    if actual != s.cell.opset:
        raise StageFailed(Verdict.OPSET_DRIFT, f"asked for opset {s.cell.opset}, the exported model has opset {actual}")


def check(s: CellState) -> None:
    check_model(s.blob)


def load(s: CellState) -> None:
    s.session = OrtSession(s.blob, s.cell.device, s.opts.threads, tensorrt=s.opts.tensorrt)
    s.found["ort_providers"] = tuple(s.session.providers)


def run(s: CellState) -> None:
    s.found["ort_outputs"] = s.session.run(s.inputs)
    if s.cell.device == "cuda":
        s.found["ort_placement"] = s.session.placement(s.inputs)


def parity(s: CellState) -> None:
    """The graph's outputs at the export shape, then at each input variant, against the reference."""
    failures = _judge(s, s.found.pop("ort_outputs"), s.expected, "onnxruntime vs reference")
    for variant in range(1, s.case.variants + 1):
        inputs32 = _inputs(s, dict(s.case.shapes[0], variant=variant), s.cell.seed)
        outputs = s.session.run(_convert(inputs32, s.cell))
        failures += _judge(s, outputs, _reference_outputs(s, inputs32), f"input variant {variant}")
    if failures:
        raise StageFailed(Verdict.MISMATCH, "; ".join(failures))


def dynamic(s: CellState) -> None:
    """A dynamic export at the case's other shapes."""
    failures: List[str] = []
    for shape in s.case.shapes[1:]:
        inputs32 = _inputs(s, shape, s.cell.seed + 1)
        outputs = s.session.run(_convert(inputs32, s.cell))
        failures += _judge(s, outputs, _reference_outputs(s, inputs32), f"shape {shape}")
    if failures:
        raise StageFailed(Verdict.MISMATCH, "; ".join(failures))


def latency(s: CellState) -> None:
    s.found["latency"] = latency_targets(s)


def memory(s: CellState) -> None:
    s.found["memory"] = memory_targets(s)


class StageSpec(NamedTuple):
    name: str
    run: Callable[[CellState], None]
    verdict: Verdict  # when third-party code raises in it
    fatal: bool = True  # such a raise skips every later stage (a StageFailed finding never does)
    when: Callable[[CellState], bool] = lambda s: True


STAGES: Tuple[StageSpec, ...] = (
    StageSpec("build", build, Verdict.HARNESS_ERROR),
    StageSpec("eager", eager, Verdict.RUN_FAILED),
    StageSpec("export", export, Verdict.EXPORT_FAILED),
    StageSpec("opset", opset, Verdict.OPSET_DRIFT),
    StageSpec("check", check, Verdict.CHECK_FAILED, fatal=False),
    StageSpec("load", load, Verdict.LOAD_FAILED),
    StageSpec("run", run, Verdict.RUN_FAILED),
    StageSpec("parity", parity, Verdict.MISMATCH),
    StageSpec("dynamic", dynamic, Verdict.RUN_FAILED, when=lambda s: s.cell.shape_mode == "dynamic"),
    StageSpec("latency", latency, Verdict.HARNESS_ERROR, fatal=False, when=lambda s: s.opts.latency),
    StageSpec("memory", memory, Verdict.HARNESS_ERROR, fatal=False, when=lambda s: s.opts.memory),
)
STAGE_NAMES = tuple(spec.name for spec in STAGES)


# Walking the stages ---------------------------------------------------------------------------------


def run_cell(
    blank: CellRecord, cell: CellSpec, case: Case, strategy: Strategy, reference: Strategy, opts: Options
) -> CellRecord:
    state = CellState(cell, case, strategy, reference, opts)
    verdict: Optional[Verdict] = None
    reason: Optional[str] = None
    stages: List[Stage] = []
    stopped_at: Optional[str] = None
    for spec in STAGES:
        if stopped_at or not spec.when(state):
            stages.append(Stage(spec.name, "skipped"))
            continue
        stage, failure, fatal = _run_stage(spec, state)
        stages.append(stage)
        if failure is not None and verdict is None:
            verdict, reason = failure
        stopped_at = spec.name if fatal else None
    if state.comparisons and stopped_at not in ("parity", "dynamic"):  # a half-judged cell has no parity
        state.found["parity"] = _parity(parity_mod.merge(state.comparisons))
    state.found.pop("ort_outputs", None)
    return blank.with_(verdict=verdict or Verdict.PASS, reason=reason, stages=tuple(stages), **state.found)


def _run_stage(spec: StageSpec, state: CellState) -> Tuple[Stage, Optional[Tuple[Verdict, str]], bool]:
    """One stage: its record, the (verdict, reason) it names if it failed, and whether the walk stops here."""
    start = time.perf_counter()
    try:
        spec.run(state)
    except StageFailed as found:  # the stage's own finding: later stages still run
        seconds = round(time.perf_counter() - start, 6)
        stage = Stage(spec.name, "failed", None, found.message, seconds)
        return stage, (found.verdict, f"{spec.name}: {found.message}"), False
    except Exception as exc:  # third-party code raised: the stage's verdict, with its message
        seconds = round(time.perf_counter() - start, 6)
        if spec.verdict == Verdict.HARNESS_ERROR:  # our bug (or the case's): its traceback, the first one
            state.found.setdefault("traceback", traceback.format_exc()[-4000:])
        stage = Stage(spec.name, "failed", type(exc).__name__, _message(exc), seconds)
        return stage, (spec.verdict, f"{spec.name}: {type(exc).__name__}: {_first_line(exc)}"), spec.fatal
    return Stage(spec.name, "ok", seconds=round(time.perf_counter() - start, 6)), None, False


def _message(exc: BaseException) -> str:
    text = str(exc).strip() or repr(exc)
    return text if len(text) <= 4000 else text[:4000] + " ..."


def _first_line(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return (lines[0] if lines else repr(exc))[:300]


# Inputs, references and judging -----------------------------------------------------------------------


def _dtype(cell: CellSpec) -> Any:
    import torch

    return getattr(torch, cell.dtype)


def _inputs(s: CellState, shape: Dict[str, int], seed: int) -> Tuple[Any, ...]:
    import torch

    values = s.case.inputs(s.cell.params, shape, torch.Generator().manual_seed(seed))
    return tuple(values) if isinstance(values, (tuple, list)) else (values,)


def _convert(inputs: Tuple[Any, ...], cell: CellSpec) -> Tuple[Any, ...]:
    dtype = _dtype(cell)
    return tuple(t.to(device=cell.device, dtype=dtype) if t.is_floating_point() else t.to(cell.device) for t in inputs)


def _reference_outputs(s: CellState, inputs32: Tuple[Any, ...]) -> Any:
    """The ground truth: the family's reference strategy in float32 eager PyTorch on the cell's device."""
    import torch

    model = s.ref_model.to(s.cell.device)
    with torch.no_grad(), s.reference_routing():
        return model(*(t.to(s.cell.device) for t in inputs32))


def _judge(s: CellState, outputs: Any, expected: Any, where: str) -> List[str]:
    """Compare one set of outputs; keep the comparison for the record; the failure's description, if any."""
    result = parity_mod.compare(outputs, expected, s.atol, s.rtol)
    s.comparisons.append(result)
    return [] if result["ok"] else [parity_mod.describe_mismatch(result, where)]


def _parity(result: Dict[str, Any]) -> Parity:
    return Parity(**{k: v for k, v in result.items() if k != "ok"})
