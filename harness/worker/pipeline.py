"""One cell, stage by stage, in the order of STAGES: build, eager, export, opset, check, artifact, load, run,
parity, dynamic, latency, memory.

The first stage that fails names the verdict; a fatal failure skips the stages after it, a non-fatal one (the
checker, the measurements) lets them run for the record. Each stage is one function of the cell's state.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from harness.artifacts.store import ArtifactStore, Manifest, Sample, graph_digest
from harness.campaign.options import Options
from harness.judge import parity as parity_mod
from harness.judge.graph import describe_model
from harness.judge.session import OrtSession
from harness.judge.stages import StageFailed, StageSpec, walk
from harness.plan.registry import Case
from harness.plan.spec import CellSpec
from harness.record import CellRecord, ExportInfo, Parity, Verdict
from harness.strategies import Strategy
from harness.worker.costs import latency_targets, memory_targets
from harness.worker.export import check_model, export_onnx
from harness.worker.state import CellState, Judged

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
    s.input_names = list(s.case.input_names) or [f"input{i}" for i in range(len(s.inputs))]
    with s.routing():
        s.blob = export_onnx(
            s.strategy.wrap(s.model, s.cell),
            s.inputs,
            opset=s.cell.opset,
            exporter=s.cell.exporter,
            input_names=s.input_names,
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
    s.session = OrtSession(s.blob, s.cell.device, s.opts.threads, tensorrt=s.opts.tensorrt, input_names=s.input_names)
    s.found["ort_providers"] = tuple(s.session.providers)


def run(s: CellState) -> None:
    s.found["ort_outputs"] = s.session.run(s.inputs)
    if s.cell.device == "cuda":
        s.found["ort_placement"] = s.session.placement(s.inputs)


def artifact(s: CellState) -> None:
    """Every input set the graph is judged on, with the reference's outputs; kept on disk when the run keeps
    artifacts, so other runtimes can judge the same graph (harness replay)."""
    s.judged = [Judged("export shape", "parity", s.inputs, s.expected)]
    for variant in range(1, s.case.variants + 1):
        inputs32 = _inputs(s, dict(s.case.shapes[0], variant=variant), s.cell.seed)
        s.judged.append(
            Judged(f"input variant {variant}", "parity", _convert(inputs32, s.cell), _reference_outputs(s, inputs32))
        )
    if s.cell.shape_mode == "dynamic":
        for shape in s.case.shapes[1:]:
            inputs32 = _inputs(s, shape, s.cell.seed + 1)
            s.judged.append(
                Judged(f"shape {shape}", "dynamic", _convert(inputs32, s.cell), _reference_outputs(s, inputs32))
            )
    if s.opts.artifacts_dir:
        s.found["artifact"] = _keep(s, ArtifactStore(s.opts.artifacts_dir))


# Input sets for calibrating a static int8 quantization of the graph: the case's own inputs at the export shape
# under other seeds than any set the graph is judged on. Not for the benchmark-size cases (their inputs are large
# and they are not converted).
CALIBRATION_SETS = 4
CALIBRATION_SEED = 1000


def _calibration(s: CellState) -> List[Tuple[Any, ...]]:
    if "bench" in s.case.tags:
        return []
    seeds = (s.cell.seed + CALIBRATION_SEED + i for i in range(CALIBRATION_SETS))
    return [_convert(_inputs(s, s.case.shapes[0], seed), s.cell) for seed in seeds]


def _keep(s: CellState, store: ArtifactStore) -> str:
    samples = tuple(
        Sample(
            j.label,
            j.stage,
            tuple(map(store.put_array, _arrays(j.inputs))),
            tuple(map(store.put_array, _arrays(j.expected))),
        )
        for j in s.judged
    ) + tuple(
        Sample(f"calibration {i + 1}", "calibration", tuple(map(store.put_array, _arrays(inputs))), ())
        for i, inputs in enumerate(_calibration(s))
    )
    record = s.blank.with_(**{k: s.found[k] for k in ("actual_opset", "export") if k in s.found})
    manifest = Manifest(
        env=s.blank.env,
        cell_id=s.cell.cell_id,
        record=record.to_json(),
        input_names=tuple(s.input_names),
        atol=s.atol,
        rtol=s.rtol,
        samples=samples,
        graph=graph_digest(s.blob),
    )
    store.write(manifest, s.blob)
    return manifest.digest


def parity(s: CellState) -> None:
    """The graph's outputs at the export shape, then at each input variant, against the reference."""
    first, *others = [j for j in s.judged if j.stage == "parity"]
    failures = _judge(s, s.found.pop("ort_outputs"), first.expected, "onnxruntime vs reference")
    for j in others:
        failures += _judge(s, s.session.run(j.inputs), j.expected, j.label)
    if failures:
        raise StageFailed(Verdict.MISMATCH, "; ".join(failures))


def dynamic(s: CellState) -> None:
    """A dynamic export at the case's other shapes."""
    failures: List[str] = []
    for j in (j for j in s.judged if j.stage == "dynamic"):
        failures += _judge(s, s.session.run(j.inputs), j.expected, j.label)
    if failures:
        raise StageFailed(Verdict.MISMATCH, "; ".join(failures))


def latency(s: CellState) -> None:
    s.found["latency"] = latency_targets(s)


def memory(s: CellState) -> None:
    s.found["memory"] = memory_targets(s)


def _costed(s: CellState) -> bool:
    return s.opts.costs(s.case.tags)


def _uncosted(s: CellState) -> Optional[str]:
    return s.opts.uncosted(s.case.tags)


STAGES: Tuple[StageSpec, ...] = (
    StageSpec("build", build, Verdict.HARNESS_ERROR),
    StageSpec("eager", eager, Verdict.RUN_FAILED),
    StageSpec("export", export, Verdict.EXPORT_FAILED),
    StageSpec("opset", opset, Verdict.OPSET_DRIFT),
    StageSpec("check", check, Verdict.CHECK_FAILED, fatal=False),
    StageSpec("artifact", artifact, Verdict.HARNESS_ERROR),
    StageSpec("load", load, Verdict.LOAD_FAILED),
    StageSpec("run", run, Verdict.RUN_FAILED),
    StageSpec("parity", parity, Verdict.MISMATCH),
    StageSpec("dynamic", dynamic, Verdict.RUN_FAILED, when=lambda s: s.cell.shape_mode == "dynamic"),
    StageSpec("latency", latency, Verdict.HARNESS_ERROR, False, lambda s: s.opts.latency and _costed(s), _uncosted),
    StageSpec("memory", memory, Verdict.HARNESS_ERROR, False, lambda s: s.opts.memory and _costed(s), _uncosted),
)
STAGE_NAMES = tuple(spec.name for spec in STAGES)


# Walking the stages ---------------------------------------------------------------------------------


def run_cell(
    blank: CellRecord, cell: CellSpec, case: Case, strategy: Strategy, reference: Strategy, opts: Options
) -> CellRecord:
    state = CellState(cell, case, strategy, reference, opts, blank)
    walked = walk(STAGES, state, state.found)
    if state.comparisons and walked.stopped_at not in ("parity", "dynamic"):  # a half-judged cell has no parity
        state.found["parity"] = _parity(parity_mod.merge(state.comparisons))
    state.found.pop("ort_outputs", None)
    return blank.with_(
        verdict=walked.verdict or Verdict.PASS, reason=walked.reason, stages=walked.stages, **state.found
    )


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


def _arrays(value: Any) -> List[Any]:
    """Tensors (nested in tuples or not) as the numpy arrays a runtime is fed or compared with, as they are."""
    if isinstance(value, (list, tuple)):
        return [a for item in value for a in _arrays(item)]
    return [value.detach().cpu().numpy() if hasattr(value, "detach") else value]
