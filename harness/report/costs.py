"""Latency and memory relative to a reference: the numbers behind the charts, the advisor and the upgrade view.

A cell's cost is its measurement in the runtime that judged it (onnxruntime, or OpenVINO for its replays). Its
reference, for the same environment, runtime, case, parameters, opset, shape mode, device, dtype and precision, is
the first that exists of:
  1. the family's reference strategy (each record names it) passing in that runtime, at that precision;
  2. the reference run eagerly in PyTorch: its own cells' eager timing, else the "reference" target the other
     strategies' cells measured beside their own (the median of them);
  3. the cheapest passing strategy there.
Ratios are averaged geometrically, so that a 2x and a 0.5x cancel out.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Optional, Sequence

import pandas as pd

from harness.record import Verdict

REFERENCE_KEY = ["env", "runtime", "case", "params", "opset", "shape_mode", "device", "dtype", "precision"]
# The kinds of reference, best first.
REFERENCE_ORT, REFERENCE_EAGER, CHEAPEST = "reference ORT", "reference eager", "cheapest strategy"
REFERENCE_KINDS = (REFERENCE_ORT, REFERENCE_EAGER, CHEAPEST)
METRICS = {"latency": "lat", "memory": "mem"}
PASS = Verdict.PASS.value


RUNTIME_SHORT = {"onnxruntime": "ORT", "openvino": "OpenVINO"}


def reference_label(kind: str, reference: str, runtime_name: str = "onnxruntime") -> str:
    """A kind of reference named after the family's reference: "native ORT", "native eager", "eager PyTorch"."""
    if kind == REFERENCE_ORT:
        return f"{reference} {RUNTIME_SHORT.get(runtime_name, runtime_name)}"
    if kind == REFERENCE_EAGER:
        return "eager PyTorch" if reference == "eager" else f"{reference} eager"
    return kind


def geomean(values: Iterable[float]) -> Optional[float]:
    logs = [math.log(v) for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(logs) / len(logs)) if logs else None


def references(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per reference key with `ref` (seconds or bytes) and `ref_kind`."""
    prefix = METRICS[metric]
    own = frame[frame["strategy"] == frame["reference"]]
    choices = [
        (REFERENCE_ORT, own[own["verdict"] == PASS].groupby(REFERENCE_KEY)[prefix + "_rt"].min()),
        (REFERENCE_EAGER, own.groupby(REFERENCE_KEY)[prefix + "_eager"].min()),
        (REFERENCE_EAGER, frame.groupby(REFERENCE_KEY)[prefix + "_reference"].median()),
        (CHEAPEST, frame[frame["verdict"] == PASS].groupby(REFERENCE_KEY)[prefix + "_rt"].min()),
    ]
    parts = []
    for kind, series in choices:
        series = series.dropna()
        series = series[series > 0]
        parts.append(pd.DataFrame({"ref": series, "ref_kind": kind}))
    table = pd.concat(parts)
    # The first choice listed wins for each key.
    table = table[~table.index.duplicated(keep="first")]
    return table.reset_index() if len(table) else pd.DataFrame(columns=REFERENCE_KEY + ["ref", "ref_kind"])


def with_ratios(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The passing cells that were measured, each with `ratio` to its reference, its kind and its label."""
    column = METRICS[metric] + "_rt"
    measured = frame[(frame["verdict"] == PASS) & frame[column].notna() & (frame[column] > 0)]
    if measured.empty:
        return measured.assign(
            ref=pd.Series(dtype=float),
            ref_kind=pd.Series(dtype=object),
            ref_label=pd.Series(dtype=object),
            ratio=pd.Series(dtype=float),
        )
    refs = references(frame, metric)
    joined = measured.merge(refs, on=REFERENCE_KEY, how="inner")
    labels = [
        reference_label(k, r, n) for k, r, n in zip(joined["ref_kind"], joined["reference"], joined["runtime_name"])
    ]
    labels = pd.Series(labels, index=joined.index, dtype=object)
    return joined.assign(ratio=joined[column] / joined["ref"], ref_label=labels)


def best_reference_only(ratios: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Within each group, only the cells measured against the best reference the group has.

    Mixing references in one mean would compare apples with pears: where the reference passes for some
    parameters only, the group's numbers are "relative to the reference over the cells both have", not a blend.
    """
    if ratios.empty:
        return ratios
    rank = ratios["ref_kind"].map({kind: i for i, kind in enumerate(REFERENCE_KINDS)})
    best = rank.groupby([ratios[c] for c in by]).transform("min")
    return ratios[rank == best]


def main_kind(kinds: Iterable[str]) -> str:
    """The reference most ratios in a group were taken against, to label the group's numbers (the first seen of
    those as common)."""
    counts = Counter(k for k in kinds if isinstance(k, str))
    return counts.most_common(1)[0][0] if counts else ""


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
