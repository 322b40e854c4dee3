"""Latency and memory relative to a reference: the numbers behind the charts, the advisor and the upgrade view.

A cell's cost is its onnxruntime measurement. Its reference, for the same case, parameters, opset, shape mode,
device and dtype, is the first that exists of: the family's native operator in onnxruntime (a passing cell),
native eager PyTorch, and the cheapest passing strategy there. Ratios are averaged geometrically, so that a
2x and a 0.5x cancel out.
"""

from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence

import pandas as pd

REFERENCE_KEY = ["env", "case", "params", "opset", "shape_mode", "device", "dtype"]
REFERENCE_KINDS = ("native ORT", "native eager", "cheapest strategy")
METRICS = {"latency": "lat", "memory": "mem"}


def geomean(values: Iterable[float]) -> Optional[float]:
    logs = [math.log(v) for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(logs) / len(logs)) if logs else None


def references(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per reference key with `ref` (seconds or bytes) and `ref_kind`."""
    prefix = METRICS[metric]
    ort, eager = prefix + "_ort", prefix + "_eager"
    native = frame[frame["strategy"] == "native"]
    passing = frame[frame["verdict"] == "pass"]
    choices = [
        native[native["verdict"] == "pass"].groupby(REFERENCE_KEY)[ort].min(),
        native.groupby(REFERENCE_KEY)[eager].min(),
        passing.groupby(REFERENCE_KEY)[ort].min(),
    ]
    parts = []
    for kind, series in zip(REFERENCE_KINDS, choices):
        series = series.dropna()
        series = series[series > 0]
        parts.append(pd.DataFrame({"ref": series, "ref_kind": kind}))
    table = pd.concat(parts) if parts else pd.DataFrame(columns=["ref", "ref_kind"])
    # The first kind listed wins for each key.
    table = table[~table.index.duplicated(keep="first")]
    return table.reset_index() if len(table) else pd.DataFrame(columns=REFERENCE_KEY + ["ref", "ref_kind"])


def with_ratios(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The passing cells that were measured, each with `ratio` to its reference and the reference's kind."""
    column = METRICS[metric] + "_ort"
    measured = frame[(frame["verdict"] == "pass") & frame[column].notna() & (frame[column] > 0)]
    if measured.empty:
        return measured.assign(
            ref=pd.Series(dtype=float), ref_kind=pd.Series(dtype=object), ratio=pd.Series(dtype=float)
        )
    refs = references(frame, metric)
    joined = measured.merge(refs, on=REFERENCE_KEY, how="inner")
    return joined.assign(ratio=joined[column] / joined["ref"])


def best_reference_only(ratios: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Within each group, only the cells measured against the best reference the group has.

    Mixing references in one mean would compare apples with pears: where native passes for some parameters
    only, the group's numbers are "relative to native over the cells both have", not a blend.
    """
    if ratios.empty:
        return ratios
    rank = ratios["ref_kind"].map({kind: i for i, kind in enumerate(REFERENCE_KINDS)})
    best = rank.groupby([ratios[c] for c in by]).transform("min")
    return ratios[rank == best]


def main_kind(kinds: Iterable[str]) -> str:
    """The reference most ratios in a group were taken against, to label the group's numbers."""
    counts = pd.Series(list(kinds)).value_counts()
    return str(counts.index[0]) if len(counts) else ""


def format_ratio(value: Optional[float]) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.2f}×" if value < 10 else f"{value:.0f}×"


def format_seconds(value: Optional[float]) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    return f"{value * 1e6:.3g} µs"


def format_bytes(value: Optional[float]) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B"
