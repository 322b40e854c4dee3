"""`bench-op`: grid_sample implementations side by side in one process, in eager torch and onnxruntime.

Rows: native eager, our rewrite eager, mmcv's `bilinear_grid_sample` eager (when it imports), onnxruntime's
own GridSample kernel (native op exported at opset 16/20, or com.microsoft::GridSample on torch < 1.12),
and onnxruntime running our exported graph and mmcv's. Every exported graph has dynamic batch and spatial
axes, as a deployed model would. Peak memory is the resident-set high-water mark of one measured call.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from harness.errors import UserError
from harness.fingerprint import _cpu_name

SCHEMA_VERSION = 1
SETTLE_S = 0.05
EXIT_OK, EXIT_USAGE = 0, 2
IMPLS = ("native", "custom", "mmcv", "ort-kernel", "ort-custom", "ort-mmcv")


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
    schema_version: int = SCHEMA_VERSION


class Unavailable(Exception):
    """An implementation that cannot run this case here; its message becomes the row's note."""


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        args = _parse(argv)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from harness.measure import RSS_METHOD, set_threads

    set_threads(args.threads)
    print(_environment_line(args.threads))
    print(
        f"timing: median and IQR of blocks over >= {args.budget:g} s per row, in {args.rounds} interleaved "
        f"rounds; peak: {RSS_METHOD} "
        "(VmHWM growth of one call after malloc_trim; onnxruntime measured on an arena-free session)\n"
    )
    records: List[BenchRecord] = []
    for shape in args.shapes:
        for mode in args.modes:
            for padding in args.paddings:
                rows = bench_case(SHAPES[shape], mode, padding, args)
                records.extend(rows)
                print(render_table(SHAPES[shape], mode, padding, rows), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                {
                    "schema_version": SCHEMA_VERSION,
                    "environment": _environment(args.threads),
                    "records": [asdict(r) for r in records],
                },
                fh,
                indent=1,
            )
    return EXIT_OK


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m harness bench-op", description=__doc__)
    p.add_argument("--shapes", default="ref,fmap,vol", help=f"comma-separated, of {', '.join(SHAPES)}")
    p.add_argument("--modes", default="bilinear", help="bilinear, nearest, bicubic (comma-separated)")
    p.add_argument("--paddings", default="zeros", help="zeros, border, reflection (comma-separated)")
    p.add_argument("--impls", default=",".join(IMPLS), help="which rows to run (default: all)")
    p.add_argument("--threads", type=int, default=2, help="torch and onnxruntime threads (default 2)")
    p.add_argument("--repeat", type=int, default=7, help="minimum timed blocks per row (default 7)")
    p.add_argument("--budget", type=float, default=1.0, help="seconds of timing per row (default 1.0)")
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="interleave the rows' timing in this many rounds, so a slow spell of a shared machine hits "
        "every row alike (default 3)",
    )
    p.add_argument(
        "--opset",
        type=int,
        default=None,
        help="opset of the exported graphs (default 16, or this torch's newest below it)",
    )
    p.add_argument("--align-corners", action="store_true", help="align_corners=True (default False)")
    p.add_argument("--json", default=None, metavar="OUT", help="also write machine-readable records")
    args = p.parse_args(list(argv or []))
    args.shapes = _choices(args.shapes, SHAPES, "--shapes")
    args.modes = _choices(args.modes, ("bilinear", "nearest", "bicubic"), "--modes")
    args.paddings = _choices(args.paddings, ("zeros", "border", "reflection"), "--paddings")
    args.impls = _choices(args.impls, IMPLS, "--impls")
    if args.threads < 1 or args.repeat < 1 or args.rounds < 1:
        raise UserError("--threads, --repeat and --rounds must be at least 1")
    return args


def _choices(text: str, allowed: Sequence[str], flag: str) -> List[str]:
    chosen = [x.strip() for x in text.split(",") if x.strip()]
    for x in chosen:
        if x not in allowed:
            raise UserError(f"{flag} {x}: unknown; use one of {', '.join(allowed)}")
    return chosen


# One case: every implementation on the same inputs -----------------------------------------------------


def bench_case(shape: Shape, mode: str, padding: str, args: argparse.Namespace) -> List[BenchRecord]:
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    x = torch.randn((shape.n, shape.c) + shape.spatial, generator=gen)
    grid = torch.rand((shape.n,) + shape.out + (len(shape.out),), generator=gen) * 2.1 - 1.05
    kwargs = dict(mode=mode, padding_mode=padding, align_corners=bool(args.align_corners))
    if mode == "bicubic" and len(shape.spatial) == 3:
        note = "bicubic is 4-D only in torch"
        return [BenchRecord(shape.name, mode, padding, "native", None, None, None, None, None, note)]
    with torch.no_grad():
        reference = F.grid_sample(x, grid, **kwargs)
    runners, unavailable = {}, {}
    for impl in args.impls:
        try:
            runners[impl] = _make(impl, x, grid, kwargs, args)
        except Unavailable as exc:
            unavailable[impl] = str(exc)
    times = _interleaved_times({impl: run for impl, (run, _) in runners.items()}, args)
    rows = []
    for impl in args.impls:
        if impl in unavailable:
            rows.append(BenchRecord(shape.name, mode, padding, impl, None, None, None, None, None, unavailable[impl]))
            continue
        run, memory_run = runners[impl]
        rows.append(_measure(shape, mode, padding, impl, run, memory_run, times[impl], reference))
    return rows


def _interleaved_times(runs: Dict[str, Callable[[], Any]], args: argparse.Namespace) -> Dict[str, Any]:
    """Each row's per-call times, sampled in `rounds` passes over all rows in turn, pooled per row."""
    import torch

    from harness.measure import Measurement, time_callable

    pooled: Dict[str, Any] = {}
    with torch.no_grad():
        for _ in range(args.rounds):
            for impl, run in runs.items():
                time.sleep(SETTLE_S)  # the previous row's spinning threads (torch's, onnxruntime's) park
                m = time_callable(
                    run,
                    threads=args.threads,
                    budget_s=args.budget / args.rounds,
                    min_samples=max(1, -(-args.repeat // args.rounds)),
                )
                if impl in pooled:
                    pooled[impl].times.extend(m.times)
                else:
                    pooled[impl] = Measurement(times=list(m.times), number=m.number, threads=args.threads)
    return pooled


def _measure(shape, mode, padding, impl, run, memory_run, timing, reference) -> BenchRecord:
    import torch

    from harness.measure import peak_rss_of

    with torch.no_grad():
        out = torch.as_tensor(run())
        diff = (out - reference).abs()
        nan_mismatch = bool((torch.isnan(out) != torch.isnan(reference)).any())
        worst = float(diff[~torch.isnan(diff)].max()) if diff.numel() else 0.0
        peak = peak_rss_of(memory_run)["peak_bytes"]
    return BenchRecord(
        shape.name,
        mode,
        padding,
        impl,
        timing.median * 1e3,
        timing.iqr * 1e3,
        timing.noisy,
        None if peak is None else peak / 2**20,
        worst,
        "NaN positions differ" if nan_mismatch else "",
    )


def _make(impl: str, x, grid, kwargs: Dict[str, Any], args) -> Tuple[Callable[[], Any], Callable[[], Any]]:
    import torch.nn.functional as F

    from harness.ops import grid_sample

    if impl in ("native", "custom", "mmcv"):
        fn = {"native": F.grid_sample, "custom": grid_sample}.get(impl) or _mmcv_op(x, kwargs)
        run = _no_grad(lambda: fn(x, grid, **kwargs))
        return run, run
    if impl == "ort-kernel":
        blob = _export_native_kernel(x, grid, kwargs, args)
    else:
        fn = grid_sample if impl == "ort-custom" else _mmcv_op(x, kwargs)
        blob = _export(fn, x, grid, kwargs, _opset(args))
    return _ort_runners(blob, x, grid, args.threads)


def _no_grad(fn: Callable[[], Any]) -> Callable[[], Any]:
    import torch

    def run() -> Any:
        with torch.no_grad():
            return fn()

    return run


def _mmcv_op(x, kwargs: Dict[str, Any]) -> Callable[..., Any]:
    if kwargs["mode"] != "bilinear" or kwargs["padding_mode"] != "zeros" or x.dim() != 4:
        raise Unavailable("mmcv's rewrite is 4-D bilinear zeros only")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from mmcv.ops.point_sample import bilinear_grid_sample
    except Exception as exc:  # ImportError, or a compiled extension that fails to load
        raise Unavailable(f"mmcv.ops.point_sample does not import: {type(exc).__name__}") from None

    def op(input, grid, mode, padding_mode, align_corners):
        return bilinear_grid_sample(input, grid, align_corners=align_corners)

    return op


# Exports and onnxruntime sessions ---------------------------------------------------------------------


def _opset(args) -> int:
    return args.opset or min(16, newest_torchscript_opset())


def newest_torchscript_opset() -> int:
    """The highest opset this torch's TorchScript exporter writes (13 on 1.8, 16 on 1.12, 20 on 2.x)."""
    import importlib

    for holder, attr in (
        ("torch.onnx._constants", "ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET"),
        ("torch.onnx._constants", "ONNX_MAX_OPSET"),
        ("torch.onnx._constants", "onnx_main_opset"),
        ("torch.onnx.symbolic_helper", "_onnx_main_opset"),
    ):
        try:
            return int(getattr(importlib.import_module(holder), attr))
        except (ImportError, AttributeError):
            continue
    return 13


class _Wrap:
    """A module around a functional op, so either exporter can trace it."""

    def __new__(cls, fn: Callable[..., Any], kwargs: Dict[str, Any]):
        import torch

        class Op(torch.nn.Module):
            def forward(self, input, grid):
                return fn(input, grid, **kwargs)

        return Op()


def _dynamic_axes(rank: int) -> Dict[str, Dict[int, str]]:
    spatial = {i: f"in{i}" for i in range(2, rank)}
    points = {i: f"out{i}" for i in range(1, rank - 1)}
    return {"input": {0: "batch", **spatial}, "grid": {0: "batch", **points}, "output": {0: "batch"}}


def _export(fn, x, grid, kwargs, opset: int) -> bytes:
    from harness.export import export_onnx

    try:
        return export_onnx(
            _Wrap(fn, kwargs),
            (x, grid),
            opset=opset,
            exporter="torchscript",
            input_names=["input", "grid"],
            output_names=["output"],
            dynamic_axes=_dynamic_axes(x.dim()),
        )
    except Exception as exc:
        raise Unavailable(f"export failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}") from None


def _export_native_kernel(x, grid, kwargs, args) -> bytes:
    import torch.nn.functional as F

    newest = newest_torchscript_opset()
    if x.dim() == 5:
        if newest < 20:
            raise Unavailable(f"5-D GridSample needs opset 20; torch exports up to {newest}")
        return _export(F.grid_sample, x, grid, kwargs, 20)
    if newest >= 16:
        return _export(F.grid_sample, x, grid, kwargs, 16)
    from harness.strategies import get_strategy

    contrib = get_strategy("grid_sample", "contrib")  # com.microsoft::GridSample, onnxruntime >= 1.9
    reason = contrib.unavailable(None)
    if reason:
        raise Unavailable(reason)
    with contrib.context(None):
        return _export(F.grid_sample, x, grid, kwargs, _opset(args))


def _ort_runners(blob: bytes, x, grid, threads: int) -> Tuple[Callable[[], Any], Callable[[], Any]]:
    try:
        import onnxruntime as ort
    except ImportError:
        raise Unavailable("onnxruntime is not installed") from None

    def session(arena: bool):
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
        so.enable_cpu_mem_arena = arena
        so.log_severity_level = 3
        try:
            return ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise Unavailable(f"onnxruntime refused the graph: {str(exc).splitlines()[0][:120]}") from None

    feeds = {"input": x.numpy(), "grid": grid.numpy()}
    timed, lean = session(True), session(False)
    lean.run(None, feeds)
    return (lambda: timed.run(None, feeds)[0]), (lambda: lean.run(None, feeds)[0])


# Report -----------------------------------------------------------------------------------------------


def render_table(shape: Shape, mode: str, padding: str, rows: List[BenchRecord]) -> str:
    by = {r.impl: r.median_ms for r in rows if r.median_ms is not None}

    def ratio(r: BenchRecord, base: str) -> str:
        return f"{r.median_ms / by[base]:.2f}x" if r.median_ms is not None and by.get(base) else "-"

    lines = [
        f"### {shape.describe()} {mode}/{padding}",
        "",
        "vs mmcv: against mmcv in the same runtime (eager rows against `mmcv`, ORT rows against `ort-mmcv`).",
        "",
        "| impl | median ms | IQR ms | vs native | vs mmcv | vs ORT kernel | peak MB | max abs diff | note |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        if r.median_ms is None:
            lines.append(f"| {r.impl} | - | - | - | - | - | - | - | {r.note} |")
            continue
        peak = "-" if r.peak_mb is None else f"{r.peak_mb:.1f}"
        note = r.note + (" noisy" if r.noisy else "")
        lines.append(
            f"| {r.impl} | {r.median_ms:.2f} | {r.iqr_ms:.2f} | {ratio(r, 'native')} "
            f"| {ratio(r, 'ort-mmcv' if r.impl.startswith('ort-') else 'mmcv')} "
            f"| {ratio(r, 'ort-kernel')} | {peak} | {r.max_abs_diff:.2e} | {note.strip()} |"
        )
    return "\n".join(lines) + "\n"


def _environment(threads: int) -> Dict[str, Any]:
    import torch

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": threads,
        "machine": platform.machine(),
        "cpu": _cpu_name(),
    }
    try:
        import onnxruntime

        env["onnxruntime"] = onnxruntime.__version__
    except ImportError:
        env["onnxruntime"] = None
    return env


def _environment_line(threads: int) -> str:
    env = _environment(threads)
    return " ".join(f"{k}={v}" for k, v in env.items())
