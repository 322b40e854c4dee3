"""grid_sample implementations measured side by side in one process, in eager torch and onnxruntime.

Rows: native eager, our rewrite eager, mmcv's `bilinear_grid_sample` eager (when it imports), onnxruntime's
own GridSample kernel (native op exported at opset 16/20, or com.microsoft::GridSample on torch < 1.12),
and onnxruntime running our exported graph and mmcv's. Every exported graph has dynamic batch and spatial
axes, as a deployed model would. Peak memory is the resident-set high-water mark of one measured call.
Each row is a strategy of the grid_sample family, asked about a cell of its own whether it can run here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from harness.judge.measure import Measurement, peak_rss_of, time_callable
from harness.plan.spec import CellSpec
from harness.record import EnvInfo, canonical_params
from harness.strategies import Strategy, get_strategy
from harness.worker.fingerprint import max_opset

# bench-op's JSON is its own format, read by benchmarks/grid_sample_table.py, not a cell record's schema.
BENCH_FORMAT_VERSION = 1
SETTLE_S = 0.05
IMPLS = ("native", "custom", "mmcv", "ort-kernel", "ort-custom", "ort-mmcv")
FAMILY = "grid_sample"


@dataclass(frozen=True)
class Shape:
    name: str
    n: int
    c: int
    spatial: Tuple[int, ...]
    out: Tuple[int, ...]

    def describe(self) -> str:
        return f"N{self.n} C{self.c} {'x'.join(map(str, self.spatial))}->{'x'.join(map(str, self.out))}"


SHAPES = {
    "ref": Shape("ref", 16, 3, (256, 256), (256, 256)),
    "fmap": Shape("fmap", 4, 64, (64, 64), (64, 64)),
    "vol": Shape("vol", 2, 16, (16, 32, 32), (16, 32, 32)),
}


@dataclass(frozen=True)
class BenchRecord:
    shape: str
    mode: str
    padding: str
    impl: str
    median_ms: Optional[float]
    iqr_ms: Optional[float]
    noisy: Optional[bool]
    peak_mb: Optional[float]
    max_abs_diff: Optional[float]
    note: str = ""
    schema_version: int = BENCH_FORMAT_VERSION


@dataclass(frozen=True)
class BenchConfig:
    """How every row is measured: which rows, on how many threads, for how long."""

    impls: Tuple[str, ...] = IMPLS
    threads: int = 2
    repeat: int = 7
    budget_s: float = 1.0
    rounds: int = 3
    opset: Optional[int] = None
    align_corners: bool = False

    def export_opset(self) -> int:
        """Opset of our exported graphs: 16 unless asked, or this torch's newest below it."""
        return self.opset or min(16, max_opset("torchscript"))


class Unavailable(Exception):
    """An implementation that cannot run this case here; its message becomes the row's note."""


class Runners(NamedTuple):
    timed: Callable[[], Any]
    lean: Callable[[], Any]  # the same call without a memory arena, so its peak is the call's own


@dataclass
class BenchCase:
    """One shape, mode and padding: the inputs every row runs on, and the cell each row's strategy judges."""

    shape: Shape
    mode: str
    padding: str
    config: BenchConfig
    env: EnvInfo
    x: Any
    grid: Any

    @property
    def kwargs(self) -> Dict[str, Any]:
        return dict(mode=self.mode, padding_mode=self.padding, align_corners=self.config.align_corners)

    @property
    def rank(self) -> int:
        return 2 + len(self.shape.spatial)

    def cell(self, strategy: str, opset: int) -> CellSpec:
        params = {"mode": self.mode, "padding_mode": self.padding, "align_corners": self.config.align_corners}
        return CellSpec(
            env=self.env.name,
            family=FAMILY,
            case="bench-op",
            params_json=canonical_params(dict(params, rank=self.rank)),
            strategy=strategy,
            opset=opset,
            exporter="torchscript",
            shape_mode="dynamic",
            device="cpu",
            dtype="float32",
        )

    def note(self, impl: str, text: str) -> BenchRecord:
        return BenchRecord(self.shape.name, self.mode, self.padding, impl, None, None, None, None, None, text)


def make_case(shape: Shape, mode: str, padding: str, config: BenchConfig, env: EnvInfo) -> BenchCase:
    import torch

    gen = torch.Generator().manual_seed(0)
    x = torch.randn((shape.n, shape.c) + shape.spatial, generator=gen)
    grid = torch.rand((shape.n,) + shape.out + (len(shape.out),), generator=gen) * 2.1 - 1.05
    return BenchCase(shape, mode, padding, config, env, x, grid)


# One case: every implementation on the same inputs -----------------------------------------------------


def bench_case(case: BenchCase) -> List[BenchRecord]:
    import torch

    from harness.ops import NATIVE_GRID_SAMPLE

    if case.mode == "bicubic" and case.rank == 5:
        return [case.note("native", "bicubic is 4-D only in torch")]
    with torch.no_grad():
        reference = NATIVE_GRID_SAMPLE(case.x, case.grid, **case.kwargs)
    runners: Dict[str, Runners] = {}
    notes: Dict[str, str] = {}
    for impl in case.config.impls:
        try:
            runners[impl] = make_runners(impl, case)
        except Unavailable as exc:
            notes[impl] = str(exc)
    times = interleaved_times({impl: r.timed for impl, r in runners.items()}, case.config)
    return [
        case.note(impl, notes[impl]) if impl in notes else _record(case, impl, runners[impl], times[impl], reference)
        for impl in case.config.impls
    ]


def interleaved_times(
    runs: Dict[str, Callable[[], Any]], config: BenchConfig, settle_s: float = SETTLE_S
) -> Dict[str, Measurement]:
    """Each row's per-call times, sampled in `rounds` passes over all rows in turn, pooled per row."""
    pooled: Dict[str, Measurement] = {}
    for _ in range(config.rounds):
        for impl, run in runs.items():
            time.sleep(settle_s)  # the previous row's spinning threads (torch's, onnxruntime's) park
            m = time_callable(
                run,
                threads=config.threads,
                budget_s=config.budget_s / config.rounds,
                min_samples=max(1, -(-config.repeat // config.rounds)),
            )
            if impl in pooled:
                pooled[impl].times.extend(m.times)
            else:
                pooled[impl] = Measurement(times=list(m.times), number=m.number, threads=config.threads)
    return pooled


def _record(case: BenchCase, impl: str, runners: Runners, timing: Measurement, reference: Any) -> BenchRecord:
    import torch

    with torch.no_grad():
        out = torch.as_tensor(runners.timed())
        diff = (out - reference).abs()
        nan_mismatch = bool((torch.isnan(out) != torch.isnan(reference)).any())
        worst = float(diff[~torch.isnan(diff)].max()) if diff.numel() else 0.0
    peak = peak_rss_of(runners.lean).peak_bytes
    return BenchRecord(
        case.shape.name,
        case.mode,
        case.padding,
        impl,
        timing.median * 1e3,
        timing.iqr * 1e3,
        timing.noisy,
        None if peak is None else peak / 2**20,
        worst,
        "NaN positions differ" if nan_mismatch else "",
    )


# The implementations: a strategy each, run eagerly or exported and run in onnxruntime -------------------


def make_runners(impl: str, case: BenchCase) -> Runners:
    if impl == "ort-kernel":
        return _ort_runners(_export_kernel(case), case)
    if impl.startswith("ort-"):
        opset = case.config.export_opset()
        return _ort_runners(_export_with(impl[len("ort-") :], case, opset), case)
    op = usable_strategy(impl, case, case.config.export_opset()).op()
    run = _no_grad(lambda: op(case.x, case.grid, **case.kwargs))
    return Runners(run, run)


def usable_strategy(name: str, case: BenchCase, opset: int) -> Strategy:
    """The family's strategy of this name, or Unavailable with its own reason why it cannot run this case."""
    strategy = get_strategy(FAMILY, name)
    reason = strategy.unavailable(case.env) or strategy.unsupported(case.cell(name, opset), case.env)
    if reason:
        raise Unavailable(reason.splitlines()[0])
    return strategy


def _no_grad(fn: Callable[[], Any]) -> Callable[[], Any]:
    import torch

    def run() -> Any:
        with torch.no_grad():
            return fn()

    return run


def _export_kernel(case: BenchCase) -> bytes:
    """onnxruntime's own kernel: the standard GridSample where this torch writes it, else the contrib op."""
    newest = max_opset("torchscript")
    if case.rank == 5:
        if newest < 20:
            raise Unavailable(f"5-D GridSample needs opset 20; torch exports up to {newest}")
        return _export_with("native", case, 20)
    if newest >= 16:
        return _export_with("native", case, 16)
    return _export_with("contrib", case, case.config.export_opset())  # com.microsoft::GridSample, ORT >= 1.9


def _export_with(name: str, case: BenchCase, opset: int) -> bytes:
    from harness.worker.export import export_onnx

    strategy = usable_strategy(name, case, opset)
    try:
        with strategy.context():
            return export_onnx(
                _module(strategy.op(), case.kwargs),
                (case.x, case.grid),
                opset=opset,
                exporter="torchscript",
                input_names=["input", "grid"],
                output_names=["output"],
                dynamic_axes=_dynamic_axes(case.rank),
            )
    except Exception as exc:
        raise Unavailable(f"export failed: {type(exc).__name__}: {_first_line(exc)}") from None


def _module(fn: Callable[..., Any], kwargs: Dict[str, Any]) -> Any:
    """A module around a functional op, so the exporter can trace it."""
    import torch

    class Op(torch.nn.Module):
        def forward(self, input, grid):
            return fn(input, grid, **kwargs)

    return Op()


def _dynamic_axes(rank: int) -> Dict[str, Dict[int, str]]:
    spatial = {i: f"in{i}" for i in range(2, rank)}
    points = {i: f"out{i}" for i in range(1, rank - 1)}
    return {"input": {0: "batch", **spatial}, "grid": {0: "batch", **points}, "output": {0: "batch"}}


def _ort_runners(blob: bytes, case: BenchCase) -> Runners:
    try:
        from harness.judge.session import OrtSession

        timed = OrtSession(blob, "cpu", case.config.threads)
        lean = OrtSession(blob, "cpu", case.config.threads, arena=False)
    except ImportError:
        raise Unavailable("onnxruntime is not installed") from None
    except Exception as exc:
        raise Unavailable(f"onnxruntime refused the graph: {_first_line(exc)}") from None
    timed_call = timed.timed_call((case.x, case.grid))
    lean_call = lean.timed_call((case.x, case.grid))
    lean_call()  # the first run allocates for good; the peak is taken of a steady call
    return Runners(lambda: timed_call()[0], lambda: lean_call()[0])


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [""])[0][:120]
