"""A cell's latency and peak memory: the strategy in eager PyTorch, its graph in onnxruntime, and (when the
strategy is not its family's reference) the reference in eager PyTorch, measured side by side in the same
process with the same timer, so the page's ratios compare figures taken together."""

from __future__ import annotations

from typing import Any, Callable, ContextManager, Dict, Tuple

from harness.judge.measure import WORKING_SET_METHOD, Footprint, peak_cuda_of, time_callable, working_set_of
from harness.judge.session import OrtSession
from harness.record import WORKING_SET, Peak, Timing
from harness.worker.state import CellState


def _eager_targets(s: CellState) -> Dict[str, Tuple[Callable[[], Any], Callable[[], ContextManager[None]]]]:
    """Eager targets by name: the call, and the routing to enter once around its measurement (not per call)."""
    import torch

    def call(model: Any, inputs: Any) -> Callable[[], Any]:
        def run() -> Any:
            with torch.no_grad():
                return model(*inputs)

        return run

    targets = {"eager": (call(s.model, s.inputs), s.routing)}
    if s.strategy.name != s.reference.name:
        reference_inputs = tuple(t.to(s.cell.device) for t in s.inputs32)
        targets["reference"] = (call(s.ref_model.to(s.cell.device), reference_inputs), s.reference_routing)
    return targets


def latency_targets(s: CellState) -> Dict[str, Timing]:
    import torch

    sync = torch.cuda.synchronize if s.cell.device == "cuda" else None
    budget, threads = s.opts.latency_budget_s, s.opts.threads
    timings = {}
    for name, (fn, routing) in _eager_targets(s).items():
        with routing():
            timings[name] = time_callable(fn, threads=threads, budget_s=budget, sync=sync).timing()
    timings["ort"] = time_callable(s.session.timed_call(s.inputs), threads=threads, budget_s=budget).timing()
    return timings


def memory_targets(s: CellState) -> Dict[str, Peak]:
    """Per target its footprint and its working set (harness.record.Peak): eager's parameters and buffers plus one
    call's growth, and that growth; a fresh onnxruntime session's growth from its creation through its first run, and
    one run's with its arena off. On CUDA, device memory: torch's peak allocation, the session's free-memory delta."""
    import torch

    if s.cell.device == "cuda":
        peaks = {}
        for name, (fn, routing) in _eager_targets(s).items():
            with routing():
                peaks[name] = peak_cuda_of(fn, torch)
        peaks["ort"] = ort_device_memory(s.session, s.inputs, torch)
        return peaks
    return dict(_eager_memory(s), **_ort_memory(s.session, s.inputs))


def _eager_memory(s: CellState) -> Dict[str, Peak]:
    models = {"eager": s.model, "reference": s.ref_model}
    peaks = {}
    for name, (fn, routing) in _eager_targets(s).items():
        with routing():
            grown = working_set_of(fn, EAGER_WORKING_SET)
        peaks[name + WORKING_SET] = grown
        weights = _parameter_bytes(models[name])
        total = None if grown.peak_bytes is None else weights + grown.peak_bytes
        peaks[name] = Peak(total, EAGER_FOOTPRINT if total is not None else grown.method)
    return peaks


EAGER_FOOTPRINT = "parameters and buffers, plus one call's rss-hwm growth"
EAGER_WORKING_SET = "rss-hwm: one call's growth, after a warm-up call"


def _parameter_bytes(model: Any) -> int:
    tensors = list(model.parameters()) + list(model.buffers()) if hasattr(model, "parameters") else []
    return sum(t.numel() * t.element_size() for t in tensors)


def _ort_memory(session: OrtSession, inputs: tuple) -> Dict[str, Peak]:
    """A fresh session's footprint, and a session's working set with its arena off: the graph the cell judged."""
    footprint = Footprint()
    fresh = OrtSession(session.blob, "cpu", session.threads, input_names=session.input_names)
    fresh.run(inputs)
    peak = footprint.peak()
    del fresh
    lean = OrtSession(session.blob, "cpu", session.threads, arena=False, input_names=session.input_names)
    return {"ort": peak, "ort" + WORKING_SET: working_set_of(lean.timed_call(inputs), WORKING_SET_METHOD)}


def ort_device_memory(session: OrtSession, inputs: tuple, torch: Any) -> Peak:
    """Device memory a fresh session takes for its weights, arena and one run (free-memory delta)."""
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    fresh = OrtSession(session.blob, "cuda", session.threads, input_names=session.input_names)
    fresh.run(inputs)
    free_after, _ = torch.cuda.mem_get_info()
    del fresh
    return Peak(max(0, free_before - free_after), "cuda-free-memory-delta")
