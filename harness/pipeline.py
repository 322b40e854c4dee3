"""One cell, stage by stage: build, eager, export, opset, check, load, run, parity, dynamic, latency, memory.

The first stage that fails names the verdict; later stages still run where they can, for the record.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from harness import parity as parity_mod
from harness.export import check_model, describe_model, export_onnx
from harness.fingerprint import EnvInfo
from harness.measure import peak_cuda_of, peak_rss_of, time_callable
from harness.ortsession import OrtSession
from harness.registry import Case
from harness.spec import CellSpec
from harness.strategies import Strategy


@dataclass
class Options:
    threads: int = 2
    latency: bool = True
    memory: bool = True
    latency_budget_s: float = 0.03
    tensorrt: bool = False


class StageFailed(Exception):
    """Raised inside the pipeline to stop it after a stage that later stages depend on."""


@dataclass
class CellRun:
    stages: List[Dict[str, Any]] = field(default_factory=list)
    verdict: Optional[str] = None
    reason: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @contextlib.contextmanager
    def stage(self, name: str, verdict: str, fatal: bool = True) -> Any:
        start = time.perf_counter()
        entry: Dict[str, Any] = {"name": name, "outcome": "ok", "error_type": None, "message": None}
        self.stages.append(entry)
        try:
            yield entry
        except StageFailed:
            raise
        except Exception as exc:  # third-party failure: the stage's own verdict
            entry.update(outcome="failed", error_type=type(exc).__name__, message=_message(exc))
            self.fail(verdict, f"{name}: {type(exc).__name__}: {_first_line(exc)}")
            if fatal:
                raise StageFailed() from exc
        finally:
            entry["seconds"] = round(time.perf_counter() - start, 6)

    def fail(self, verdict: str, reason: str) -> None:
        if self.verdict is None:
            self.verdict, self.reason = verdict, reason

    def mark_failed(self, entry: Dict[str, Any], verdict: str, message: str) -> None:
        entry.update(outcome="failed", error_type=None, message=message)
        self.fail(verdict, f"{entry['name']}: {message}")


def _message(exc: BaseException) -> str:
    text = str(exc).strip() or repr(exc)
    return text if len(text) <= 4000 else text[:4000] + " ..."


def _first_line(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return (lines[0] if lines else repr(exc))[:300]


def run_cell(
    cell: CellSpec, case: Case, strategy: Strategy, reference: Strategy, env: EnvInfo, opts: Options
) -> Dict[str, Any]:
    run = CellRun()
    try:
        _run_stages(run, cell, case, strategy, reference, env, opts)
    except StageFailed:
        pass
    except Exception:
        run.verdict = "harness_error"
        run.reason = traceback.format_exc(limit=-3).strip().splitlines()[-1][:300]
        run.extra["traceback"] = traceback.format_exc()[-4000:]
    done = {s["name"] for s in run.stages}
    for name in STAGE_NAMES:
        if name not in done:
            run.stages.append({"name": name, "outcome": "skipped", "error_type": None, "message": None, "seconds": 0.0})
    order = {n: i for i, n in enumerate(STAGE_NAMES)}
    run.stages.sort(key=lambda s: order.get(s["name"], len(order)))
    body = {"verdict": run.verdict or "pass", "reason": run.reason, "stages": run.stages}
    body.update(run.extra)
    return body


STAGE_NAMES = ("build", "eager", "export", "opset", "check", "load", "run", "parity", "dynamic", "latency", "memory")


def _run_stages(
    run: CellRun, cell: CellSpec, case: Case, strategy: Strategy, reference: Strategy, env: EnvInfo, opts: Options
) -> None:
    import torch

    torch.set_num_threads(opts.threads)
    params = cell.params
    atol, rtol = parity_mod.tolerance_for(cell.dtype, case.tolerance)
    dynamic = cell.shape_mode == "dynamic"
    dtype = getattr(torch, cell.dtype)

    with run.stage("build", "harness_error"):
        inputs32 = _inputs(case, params, case.shapes[0], cell.seed)
        ref_model = case.model(params, reference.op()).eval()
        model = case.model(params, strategy.op()).eval().to(device=cell.device, dtype=dtype)
        inputs = _convert(inputs32, cell.device, dtype)

    with run.stage("eager", "run_failed") as entry:
        expected = _eager(ref_model, reference, cell, inputs32)
        with torch.no_grad(), strategy.context(cell):
            got = model(*inputs)
        eager_parity = parity_mod.compare(got, expected, atol, rtol)
        run.extra["eager_parity"] = _public(eager_parity)
        if not eager_parity["ok"]:
            run.mark_failed(entry, "mismatch", parity_mod.describe_mismatch(eager_parity, "eager vs reference"))

    with run.stage("export", "export_failed"), strategy.context(cell):
        blob = export_onnx(
            strategy.wrap(model, cell),
            inputs,
            opset=cell.opset,
            exporter=cell.exporter,
            input_names=_input_names(case, inputs),
            output_names=case.output_names,
            dynamic_axes=case.dynamic_axes if dynamic else None,
        )

    with run.stage("opset", "opset_drift") as entry:
        info = describe_model(blob)
        run.extra["actual_opset"] = info.pop("actual_opset")
        run.extra["export"] = info
        if run.extra["actual_opset"] != cell.opset:
            run.mark_failed(
                entry,
                "opset_drift",
                f"asked for opset {cell.opset}, the exported model has opset {run.extra['actual_opset']}",
            )

    with run.stage("check", "check_failed", fatal=False):
        check_model(blob)

    with run.stage("load", "load_failed"):
        session = OrtSession(blob, cell.device, opts.threads, tensorrt=opts.tensorrt)
        run.extra["ort_providers"] = session.providers

    with run.stage("run", "run_failed"):
        ort_out = session.run(inputs)
        if cell.device == "cuda":
            run.extra["ort_placement"] = session.placement(inputs)

    results = []
    with run.stage("parity", "mismatch") as entry:
        result = parity_mod.compare(ort_out, expected, atol, rtol)
        results.append(result)
        failures = [] if result["ok"] else [parity_mod.describe_mismatch(result, "onnxruntime vs reference")]
        for variant in range(1, case.variants + 1):
            shape = dict(case.shapes[0], variant=variant)
            inputs32_v = _inputs(case, params, shape, cell.seed)
            expected_v = _eager(ref_model, reference, cell, inputs32_v)
            out_v = session.run(_convert(inputs32_v, cell.device, dtype))
            result_v = parity_mod.compare(out_v, expected_v, atol, rtol)
            results.append(result_v)
            if not result_v["ok"]:
                failures.append(parity_mod.describe_mismatch(result_v, f"input variant {variant}"))
        if failures:
            run.mark_failed(entry, "mismatch", "; ".join(failures))

    if dynamic:
        _dynamic_stage(run, cell, case, reference, ref_model, session, results, atol, rtol)
    run.extra["parity"] = _public(parity_mod.merge(results))

    if opts.latency:
        with run.stage("latency", "harness_error", fatal=False):
            run.extra["latency"] = _latency(model, strategy, cell, inputs, session, opts)
    if opts.memory:
        with run.stage("memory", "harness_error", fatal=False):
            run.extra["memory"] = _memory(model, strategy, cell, inputs, session)


def _dynamic_stage(
    run: CellRun,
    cell: CellSpec,
    case: Case,
    reference: Strategy,
    ref_model: Any,
    session: OrtSession,
    results: List[Dict[str, Any]],
    atol: float,
    rtol: float,
) -> None:
    import torch

    with run.stage("dynamic", "run_failed") as entry:
        failures = []
        for shape in case.shapes[1:]:
            inputs32 = _inputs(case, cell.params, shape, cell.seed + 1)
            expected = _eager(ref_model, reference, cell, inputs32)
            inputs = _convert(inputs32, cell.device, getattr(torch, cell.dtype))
            out = session.run(inputs)
            result = parity_mod.compare(out, expected, atol, rtol)
            results.append(result)
            if not result["ok"]:
                failures.append(parity_mod.describe_mismatch(result, f"shape {shape}"))
        if failures:
            run.mark_failed(entry, "mismatch", "; ".join(failures))


def _inputs(case: Case, params: Dict[str, Any], shape: Dict[str, int], seed: int) -> tuple:
    import torch

    gen = torch.Generator().manual_seed(seed)
    values = case.inputs(params, shape, gen)
    return tuple(values) if isinstance(values, (tuple, list)) else (values,)


def _convert(inputs: tuple, device: str, dtype: Any) -> tuple:
    return tuple(t.to(device=device, dtype=dtype) if t.is_floating_point() else t.to(device) for t in inputs)


def _eager(ref_model: Any, reference: Strategy, cell: CellSpec, inputs32: tuple) -> Any:
    """The ground truth: the family's reference strategy in float32 eager PyTorch on the cell's device."""
    import torch

    model = ref_model.to(cell.device)
    with torch.no_grad(), reference.context(cell):
        return model(*(t.to(cell.device) for t in inputs32))


def _input_names(case: Case, inputs: tuple) -> List[str]:
    if case.input_names:
        return list(case.input_names)
    return [f"input{i}" for i in range(len(inputs))]


def _latency(
    model: Any, strategy: Strategy, cell: CellSpec, inputs: tuple, session: OrtSession, opts: Options
) -> Dict[str, Any]:
    import torch

    sync = torch.cuda.synchronize if cell.device == "cuda" else None

    def eager() -> Any:
        with torch.no_grad():
            return model(*inputs)

    with strategy.context(cell):
        eager_timing = time_callable(eager, threads=opts.threads, budget_s=opts.latency_budget_s, sync=sync)
    ort_timing = time_callable(session.timed_call(inputs), threads=opts.threads, budget_s=opts.latency_budget_s)
    return {"eager": eager_timing.to_record(), "ort": ort_timing.to_record()}


def _memory(model: Any, strategy: Strategy, cell: CellSpec, inputs: tuple, session: OrtSession) -> Dict[str, Any]:
    import torch

    def eager() -> Any:
        with torch.no_grad():
            return model(*inputs)

    with strategy.context(cell):
        eager_peak = peak_cuda_of(eager, torch) if cell.device == "cuda" else peak_rss_of(eager)
    if cell.device == "cuda":
        return {"eager": eager_peak, "ort": ort_device_memory(session, inputs, torch)}
    return {"eager": eager_peak, "ort": peak_rss_of(session.timed_call(inputs))}


def ort_device_memory(session: OrtSession, inputs: tuple, torch: Any) -> Dict[str, Any]:
    """Device memory a fresh session takes for its weights, arena and one run (free-memory delta)."""
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    fresh = OrtSession(session._blob, "cuda", session._options.intra_op_num_threads)
    fresh.run(inputs)
    free_after, _ = torch.cuda.mem_get_info()
    del fresh
    return {"peak_bytes": max(0, free_before - free_after), "method": "cuda-free-memory-delta"}


def _public(result: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in result.items() if k != "ok"}
