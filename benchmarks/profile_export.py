"""RAFT small's TorchScript export per grid_sample strategy, before and after harness.ops.lean_export, side by side in
one process, with the profile of where the exporter's time goes.

    .nox/torch1.12/bin/python benchmarks/profile_export.py [--strategies native,custom,mmcv] [--opset 16] [--rounds 3]

"before" exports with the strategy's routing alone (as the rewrites exported until lean_export), "after" as the
strategy exports now (the rewrites inside lean_export; native and contrib as torch has it). Rounds interleave every
(strategy, before/after) so a slow spell of a shared machine lands on each alike; the medians are printed. Then
one export of each is profiled (cProfile, top entries by own time) and the time the exporter's C++ spends between
its Python symbolic calls is related to the size of the value map it hands each of them.

Needs torchvision with RAFT (0.12+). torchvision's PyPI build beside a +cpu torch cannot register its C++ operators
("operator torchvision::nms does not exist"); RAFT calls none of them, so --stub-torchvision-ops lets the profile
import it there (the matrix does not: its cells say the package does not import).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def export_seconds(model: Any, inputs: Tuple[Any, ...], opset: int) -> float:
    from harness.worker.export import export_onnx

    start = time.perf_counter()
    export_onnx(
        model, inputs, opset=opset, exporter="torchscript", input_names=["image1", "image2"], output_names=["output"]
    )
    return time.perf_counter() - start


def contexts(strategy: Any) -> Dict[str, Any]:
    from harness.ops import NATIVE_GRID_SAMPLE
    from harness.strategies.routing import routed

    def before() -> Any:
        stack = contextlib.ExitStack()
        stack.enter_context(routed(NATIVE_GRID_SAMPLE, strategy.op()))
        if strategy.name == "contrib":
            stack.enter_context(strategy.export_context())  # its symbolic, which lean_export never was part of
        return stack

    return {"before": before, "after": strategy.context}


def gaps(model: Any, inputs: Tuple[Any, ...], opset: int, context: Any) -> str:
    """The C++ time between symbolic calls against the size of the value map each call is handed."""
    import importlib

    name = "_run_symbolic_function"
    host = None
    for where in ("torch.onnx._internal.torchscript_exporter.utils", "torch.onnx.utils"):
        try:
            module = importlib.import_module(where)
        except ImportError:
            continue
        if hasattr(module, name):
            host = module
            break
    if host is None:
        return "(no _run_symbolic_function in this torch)"
    original = getattr(host, name)
    log: List[Tuple[int, float]] = []
    last = [0.0]

    def wrapped(g: Any, block: Any, node: Any, inputs_: Any, env: Any, *rest: Any, **kw: Any) -> Any:
        now = time.perf_counter()
        log.append((len(env), now - last[0] if last[0] else 0.0))
        try:
            return original(g, block, node, inputs_, env, *rest, **kw)
        finally:
            last[0] = time.perf_counter()

    setattr(host, name, wrapped)
    try:
        with context():
            export_seconds(model, inputs, opset)
    finally:
        setattr(host, name, original)
    quarter = max(1, len(log) // 4)
    early, late = log[1 : quarter + 1], log[-quarter:]
    mean = lambda part: sum(g for _, g in part) / len(part)  # noqa: E731
    return (
        f"{len(log)} symbolic calls, {sum(g for _, g in log):.1f} s of C++ between them; value map "
        f"{early[len(early) // 2][0]} -> {late[len(late) // 2][0]} entries, C++ per call "
        f"{mean(early) * 1e3:.2f} -> {mean(late) * 1e3:.2f} ms"
    )


def profile(model: Any, inputs: Tuple[Any, ...], opset: int, context: Any, top: int) -> str:
    prof = cProfile.Profile()
    with context():
        prof.enable()
        export_seconds(model, inputs, opset)
        prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    return "\n".join(lines[-top - 1 :])


def stub_torchvision_ops() -> None:
    sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategies", default="native,custom,mmcv")
    parser.add_argument("--opset", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--stub-torchvision-ops", action="store_true")
    args = parser.parse_args()
    if args.stub_torchvision_ops:
        stub_torchvision_ops()
    import torch

    from harness.plan.registry import get_case, load_cases
    from harness.strategies import get_strategy

    torch.set_num_threads(1)
    load_cases()
    case = get_case("raft_small")
    inputs = case.inputs(case.params[0], case.shapes[0], torch.Generator().manual_seed(0))
    built = {}
    for name in args.strategies.split(","):
        strategy = get_strategy("grid_sample", name)
        built[name] = (case.model(case.params[0], strategy.op()).eval(), contexts(strategy))
    seconds: Dict[Tuple[str, str], List[float]] = {}
    for _ in range(args.rounds):
        for name, (model, ways) in built.items():
            for way, context in ways.items():
                with context():
                    seconds.setdefault((name, way), []).append(export_seconds(model, inputs, args.opset))
    print(f"torch {torch.__version__}, opset {args.opset}, one thread, median of {args.rounds} interleaved rounds")
    native = (
        {way: statistics.median(seconds[("native", way)]) for way in ("before", "after")} if "native" in built else {}
    )
    for (name, way), values in sorted(seconds.items()):
        median = statistics.median(values)
        versus = f", {median / native['before']:.2f}x native's" if native else ""
        print(f"  {name:8s} {way:6s} {median:6.2f} s (runs {', '.join(f'{v:.1f}' for v in values)}){versus}")
    if not args.no_profile:
        for name, (model, ways) in built.items():
            for way, context in ways.items():
                print(f"== {name} {way}: {gaps(model, inputs, args.opset, context)}")
                print(profile(model, inputs, args.opset, context, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
