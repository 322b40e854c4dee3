"""bench-op's Markdown table of one case: formats BenchRecords, measures nothing."""

from __future__ import annotations

from typing import Dict, Sequence

from harness.bench.measure import BenchRecord, Shape

HEADER = (
    "| impl | median ms | IQR ms | vs native | vs mmcv | vs ORT kernel | peak MB | max abs diff | note |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---|",
)


def render_table(shape: Shape, mode: str, padding: str, rows: Sequence[BenchRecord]) -> str:
    medians = {r.impl: r.median_ms for r in rows if r.median_ms is not None}
    lines = [
        f"### {shape.describe()} {mode}/{padding}",
        "",
        "vs mmcv: against mmcv in the same runtime (eager rows against `mmcv`, ORT rows against `ort-mmcv`).",
        "",
        *HEADER,
    ]
    lines.extend(_row(r, medians) for r in rows)
    return "\n".join(lines) + "\n"


def _row(r: BenchRecord, medians: Dict[str, float]) -> str:
    if r.median_ms is None or r.iqr_ms is None:
        return f"| {r.impl} | - | - | - | - | - | - | - | {r.note} |"
    peak = "-" if r.peak_mb is None else f"{r.peak_mb:.1f}"
    diff = "-" if r.max_abs_diff is None else f"{r.max_abs_diff:.2e}"
    note = (r.note + (" noisy" if r.noisy else "")).strip()
    same_runtime_mmcv = "ort-mmcv" if r.impl.startswith("ort-") else "mmcv"
    return (
        f"| {r.impl} | {r.median_ms:.2f} | {r.iqr_ms:.2f} | {_ratio(r, medians, 'native')} "
        f"| {_ratio(r, medians, same_runtime_mmcv)} | {_ratio(r, medians, 'ort-kernel')} "
        f"| {peak} | {diff} | {note} |"
    )


def _ratio(r: BenchRecord, medians: Dict[str, float], base: str) -> str:
    if r.median_ms is None or not medians.get(base):
        return "-"
    return f"{r.median_ms / medians[base]:.2f}x"
