"""A cell's latency and peak memory: the strategy in eager PyTorch, its graph in onnxruntime, and (when the
strategy is not its family's reference) the reference in eager PyTorch, measured side by side in the same
process with the same timer, so the page's ratios compare figures taken together."""

from __future__ import annotations

from typing import Any, Callable, ContextManager, Dict, Tuple

from harness.judge.measure import peak_cuda_of, peak_rss_of, time_callable
from harness.judge.session import OrtSession
from harness.record import Peak, Timing
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
    import torch

    on_cuda = s.cell.device == "cuda"
    peaks = {}
    for name, (fn, routing) in _eager_targets(s).items():
        with routing():
            peaks[name] = peak_cuda_of(fn, torch) if on_cuda else peak_rss_of(fn)
    session = s.session
    peaks["ort"] = ort_device_memory(session, s.inputs, torch) if on_cuda else peak_rss_of(session.timed_call(s.inputs))
    return peaks


def ort_device_memory(session: OrtSession, inputs: tuple, torch: Any) -> Peak:
    """Device memory a fresh session takes for its weights, arena and one run (free-memory delta)."""
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    fresh = OrtSession(session.blob, "cuda", session.threads, input_names=session.input_names)
    fresh.run(inputs)
    free_after, _ = torch.cuda.mem_get_info()
    del fresh
    return Peak(max(0, free_before - free_after), "cuda-free-memory-delta")
