"""What converted graphs (fp16, int8) cost in accuracy and buy in latency, per strategy, and the tolerances they are
judged with: a table per family and strategy, a chart of error against latency, and the protocol in a few lines.

A converted graph's latency is compared with its own fp32 graph in the same runtime (the same cell, replayed or
exported there); its error is the record's mean absolute difference from fp32 eager PyTorch, and its PSNR.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import matplotlib
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from harness.judge.parity import PRECISION_TOLERANCES, TOLERANCES
from harness.record import Verdict
from harness.record.precisions import RUNTIME, precision_of
from harness.report.charts import CHART_FAMILY, NICE_TICKS, RC, Chart, plain_text, svg_text
from harness.report.costs import format_ratio, geomean
from harness.report.recipes import RecipeRow
from harness.report.runtimes import CELL, RAN, ladder
from harness.report.table import CONVERTER, FP32, MADE_BY_CONVERTER
from harness.report.vocab import family_sort_key, precision_sort_key, strategy_sort_key

PASS = Verdict.PASS.value
NA = Verdict.NOT_APPLICABLE.value
SAME_GRAPH = [c for c in CELL if c != "precision"] + ["runtime"]  # a converted graph's fp32 twin, same runtime
FINE_TICKS = (0.7, 0.8, 1.5, 3)  # between NICE_TICKS: converted graphs are rarely more than 3x off fp32
PRECISION_MARKS = {
    "fp32": "o",
    "fp16": "s",
    "fp16-onnxconverter": "P",
    "fp16-recipe": "p",
    "int8-dynamic": "^",
    "int8-static": "D",
    "int8-static-weighted": "d",
    "int8-static-recipe": "*",
    "runtime-default": "v",
    "runtime-bf16": "<",
    "runtime-f16": ">",
}


@dataclass(frozen=True)
class Tolerance:
    precision: str
    atol: str
    rtol: str


@dataclass(frozen=True)
class PrecisionCell:
    """One strategy's graphs at one precision, over every runtime that judged them."""

    passed: int
    judged: int  # records of converted graphs judged in a runtime
    not_converted: int  # conversions that failed or did not apply
    failed_conversions: int
    error: str  # median mean absolute error of the graphs that ran
    psnr: str  # median PSNR of those with image-like outputs
    latency: str  # geometric mean of the latency ratio to the same graph in fp32, same runtime
    tone: str  # all | some | none | empty
    p99: str = "—"  # median 99th-percentile absolute error of the graphs that ran


@dataclass(frozen=True)
class PrecisionRow:
    family: str
    strategy: str
    cells: Tuple[PrecisionCell, ...]  # one per PrecisionView.precisions


@dataclass(frozen=True)
class MadeBy:
    """What a precision on the page is and what made it (harness.record.precisions; the records' converters)."""

    precision: str
    what: str
    made_by: str  # the converters of its records, or the runtime
    judged_as: str


@dataclass(frozen=True)
class PrecisionView:
    precisions: Tuple[str, ...]  # the converted precisions on the page (not fp32)
    runtimes: Tuple[str, ...]  # the runtimes that judged converted graphs
    converters: Tuple[str, ...]
    tolerances: Tuple[Tolerance, ...]
    rows: Tuple[PrecisionRow, ...]
    chart: Optional[Chart]
    made_by: Tuple[MadeBy, ...] = ()
    recipes: Tuple[RecipeRow, ...] = ()


def tolerances() -> Tuple[Tolerance, ...]:
    """How each precision is judged against fp32 eager PyTorch (harness.judge.parity's constants)."""
    atol, rtol = TOLERANCES["float32"]
    found = [Tolerance(FP32, f"{atol:g} (the cell's own)", f"{rtol:g}")]
    for precision, (share, rtol) in sorted(PRECISION_TOLERANCES.items(), key=lambda kv: precision_sort_key(kv[0])):
        found.append(
            Tolerance(precision, f"{share:.0%} of the reference output's range", f"{rtol:g}" if rtol else "none")
        )
    return tuple(found)


def with_fp32_ratio(frame: pd.DataFrame) -> pd.DataFrame:
    """The records of converted graphs judged in a runtime, with `ratio`: latency over the same graph's in fp32 in
    the same runtime (NaN where either was not timed)."""
    converted = frame[(frame["precision"] != FP32) & (~frame["kind"].isin(MADE_BY_CONVERTER))]
    fp32 = frame.loc[frame["precision"] == FP32, SAME_GRAPH + ["lat_rt"]].drop_duplicates(SAME_GRAPH, keep="last")
    joined = converted.merge(fp32, on=SAME_GRAPH, how="left", suffixes=("", "_fp32"))
    valid = (joined["lat_rt"] > 0) & (joined["lat_rt_fp32"] > 0)
    return joined.assign(ratio=(joined["lat_rt"] / joined["lat_rt_fp32"]).where(valid))


def _median(values: Sequence[float]) -> Optional[float]:
    known = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(known) if known else None


def _cell(judged: pd.DataFrame, conversions: pd.DataFrame) -> PrecisionCell:
    ran = judged[judged["verdict"].isin(RAN)]
    passed = int((judged["verdict"] == PASS).sum())
    error, psnr = _median(ran["mean_abs"].tolist()), _median(ran["psnr"].tolist())
    p99 = _median(ran["p99_abs"].tolist())
    tone = "empty" if judged.empty else "all" if passed == len(judged) else "some" if passed else "none"
    return PrecisionCell(
        passed,
        len(judged),
        len(conversions),
        int((conversions["verdict"] != NA).sum()),
        "—" if error is None else f"{error:.2g}",
        "—" if psnr is None else f"{psnr:.1f} dB",
        format_ratio(geomean(ran["ratio"].tolist())),
        tone,
        "—" if p99 is None else f"{p99:.2g}",
    )


def precision_rows(frame: pd.DataFrame, precisions: Sequence[str], ratios: pd.DataFrame) -> List[PrecisionRow]:
    """A row per family and strategy that had graphs converted, a cell per precision."""
    conversions = frame[(frame["precision"] != FP32) & (frame["kind"].isin(MADE_BY_CONVERTER))]
    judged = {key: part for key, part in ratios.groupby(["family", "strategy", "precision"], sort=False)}
    failed = {key: part for key, part in conversions.groupby(["family", "strategy", "precision"], sort=False)}
    portability = dict(zip(zip(frame["family"], frame["strategy"]), frame["portability"]))
    references = set(zip(frame["family"], frame["reference"]))
    keys = sorted(
        {k[:2] for k in list(judged) + list(failed)},
        key=lambda k: (family_sort_key(k[0]), strategy_sort_key(k[1], portability[k], k in references)),
    )
    none = ratios.iloc[0:0]
    return [
        PrecisionRow(
            family,
            strategy,
            tuple(
                _cell(judged.get((family, strategy, p), none), failed.get((family, strategy, p), conversions.iloc[0:0]))
                for p in precisions
            ),
        )
        for family, strategy in keys
    ]


def error_latency_chart(ratios: pd.DataFrame, colours: Dict[str, str]) -> Chart:
    """Error against latency, one mark per strategy and precision of the chart's family."""
    chart_id = "chart-precision"
    title = f"Accuracy against speed of converted graphs, {CHART_FAMILY}"
    caption = (
        "One mark per strategy and precision: the median mean absolute difference from fp32 eager PyTorch of its "
        "graphs that ran, against the geometric mean of their latency over the same graph's in fp32 in the same "
        "runtime (left of the dashed line: faster than fp32). Both axes are logarithmic."
    )
    cells = ratios[(ratios["family"] == CHART_FAMILY) & ratios["verdict"].isin(RAN)]
    points = []
    for (strategy, precision), part in cells.groupby(["strategy", "precision"], sort=False):
        error, ratio = _median(part["mean_abs"].tolist()), geomean(part["ratio"].tolist())
        if error is not None and ratio is not None and strategy in colours:
            points.append((strategy, str(precision), ratio, max(error, 1e-12)))
    if not points:
        return Chart(chart_id, title, caption, None, f"No converted {CHART_FAMILY} graph ran with a timing.")
    figure = Figure(figsize=(7.5, 3.2))
    axes = figure.add_subplot(1, 1, 1)
    for strategy, precision, ratio, error in points:
        marker = PRECISION_MARKS.get(precision, "X")
        axes.scatter([ratio], [error], s=30, marker=marker, color=colours[strategy], alpha=0.85, edgecolors="none")
    axes.set_xscale("log")
    axes.set_yscale("log")
    ratios = [p[2] for p in points] + [1.0]
    low, high = min(ratios) / 1.25, max(ratios) * 1.25
    axes.set_xlim(low, high)
    axes.xaxis.set_major_locator(FixedLocator([t for t in NICE_TICKS + FINE_TICKS if low <= t <= high]))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.axvline(1.0, color="#444", linewidth=0.8, linestyle="--")
    axes.set_xlabel("latency / the same graph in fp32, same runtime")
    axes.set_ylabel("mean |onnx − eager|")
    axes.grid(color="#ddd", linewidth=0.5)
    shown = list(dict.fromkeys(p[0] for p in points))
    handles = [Line2D([], [], linestyle="none", marker="o", color=colours[s], label=plain_text(s)) for s in shown]
    marks = sorted({p[1] for p in points}, key=precision_sort_key)
    handles += [
        Line2D([], [], linestyle="none", marker=PRECISION_MARKS.get(p, "X"), color="#555", label=p) for p in marks
    ]
    axes.legend(handles=handles, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return Chart(chart_id, title, caption, svg_text(figure, chart_id, title))


def made_by(frame: pd.DataFrame, precisions: Sequence[str]) -> Tuple[MadeBy, ...]:
    """Each precision on the page with the converters its records name (a runtime precision: the runtimes)."""
    found = []
    for name in precisions:
        made = precision_of(name)
        part = frame[frame["precision"] == name]
        if made.made_by == RUNTIME:
            makers = sorted({str(r) for r in part["runtime"] if isinstance(r, str) and r != CONVERTER})
        else:
            makers = sorted({str(c) for c in part["converter"] if isinstance(c, str) and c})
        judged = "the precision it computes at" if made.tolerance == "runtime" else made.tolerance
        found.append(MadeBy(name, made.what, ", ".join(makers) or "—", judged))
    return tuple(found)


def precision_view(frame: pd.DataFrame, colours: Dict[str, str], recipes: Tuple[RecipeRow, ...] = ()) -> PrecisionView:
    """`frame`: every record; `colours`: each strategy's colour in the page's other charts; `recipes`: the
    searches' answers (harness.report.recipes)."""
    converted = frame[frame["precision"] != FP32]
    precisions = tuple(sorted(set(converted["precision"]), key=precision_sort_key))
    ratios = with_fp32_ratio(frame)
    converters = tuple(sorted({str(c) for c in converted["converter"] if isinstance(c, str) and c}))
    with matplotlib.rc_context(RC):
        chart = error_latency_chart(ratios, colours) if not ratios.empty else None
    return PrecisionView(
        precisions,
        tuple(ladder(ratios["runtime"])),
        converters,
        tolerances(),
        tuple(precision_rows(frame, precisions, ratios)),
        chart,
        made_by(frame, precisions),
        recipes,
    )
