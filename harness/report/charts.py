"""Charts drawn with matplotlib (Agg, no pyplot) and inlined as SVG text: cost relative to the family's reference
(as its records name it), and accuracy."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import matplotlib
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from harness.record import Verdict
from harness.report.costs import (
    CHEAPEST,
    REFERENCE_EAGER,
    best_reference_only,
    format_ratio,
    geomean,
    main_kind,
    with_ratios,
)

CHART_FAMILY = "grid_sample"
PALETTE = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e", "#9498a0")
ENV_MARKS = "osD^vP*X"
ZERO_FLOOR = 1e-12  # where an exact match (max_abs 0) is drawn on the log axis
RC = {
    "svg.fonttype": "none",  # text stays text: smaller, sharper, and searchable
    "font.size": 9,
    "font.family": "sans-serif",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
}


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    caption: str
    svg: Optional[str]  # None when there is nothing to draw; `note` says why
    note: str = ""


def plain_text(label: object) -> str:
    # A '$' would switch matplotlib into mathtext.
    return str(label).replace("$", r"\$")


def svg_text(figure: Figure, chart_id: str, title: str) -> str:
    """The figure as an <svg> element fit for inlining: no prolog, comments or metadata, ids prefixed."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": chart_id}):
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)
    text = re.sub(r'\bid="([^"]+)"', rf'id="{chart_id}-\1"', text)
    text = re.sub(r"url\(#([^)]+)\)", rf"url(#{chart_id}-\1)", text)
    text = re.sub(r'xlink:href="#([^"]+)"', rf'xlink:href="#{chart_id}-\1"', text)
    head = f'<svg role="img" aria-label="{_attr(title)}" class="chart-svg" '
    text = re.sub(r'<svg ([^>]*?)width="[^"]*" height="[^"]*"', lambda m: head + m.group(1), text, count=1)
    return text


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def strategy_colours(strategies: Sequence[str]) -> Dict[str, str]:
    return {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(strategies)}


def cost_summary(frame: pd.DataFrame, metric: str, envs: Sequence[str]) -> pd.DataFrame:
    """Geometric mean ratio per (device, env, strategy), over the cells measured against the best reference."""
    ratios = best_reference_only(with_ratios(frame[frame["family"] == CHART_FAMILY], metric), ["device", "env"])
    ratios = ratios[ratios["strategy"] != ratios["reference"]] if not ratios.empty else ratios
    rows = []
    for (device, env, strategy), group in ratios.groupby(["device", "env", "strategy"]) if not ratios.empty else []:
        rows.append(
            {
                "device": device,
                "env": env,
                "strategy": strategy,
                "ratio": geomean(group["ratio"]),
                "cells": len(group),
                "ref_kind": main_kind(group["ref_kind"]),
            }
        )
    table = pd.DataFrame(rows, columns=["device", "env", "strategy", "ratio", "cells", "ref_kind"])
    order = {e: i for i, e in enumerate(envs)}
    return table.sort_values(by=["device", "env"], key=lambda col: col.map(order) if col.name == "env" else col)


def family_reference(frame: pd.DataFrame, family: str) -> str:
    """The reference strategy the family's records name (the most common, should they disagree)."""
    return main_kind(frame.loc[frame["family"] == family, "reference"])


def cost_chart(frame: pd.DataFrame, metric: str, envs: Sequence[str], colours: Dict[str, str]) -> Chart:
    chart_id = "chart-" + metric
    reference = family_reference(frame, CHART_FAMILY)
    named = f" ({reference} for {CHART_FAMILY})" if reference else f" ({CHART_FAMILY})"
    title = f"{metric.capitalize()} relative to the family's reference{named}, geometric mean over passing cells"
    caption = (
        "Each bar: a strategy's onnxruntime {} divided by the reference strategy's in onnxruntime, over the cells "
        "both pass. Where the reference never passes in an environment, the bars compare with the reference run "
        "eagerly in PyTorch or, failing that, with the cheapest strategy, as marked under the environment's name. "
        "Below 1 is cheaper than the reference."
    ).format("median latency" if metric == "latency" else "memory footprint")
    table = cost_summary(frame, metric, envs)
    if table.empty:
        return Chart(chart_id, title, caption, None, f"No passing {CHART_FAMILY} cells were measured.")
    devices = list(dict.fromkeys(table["device"]))
    widths = [max(2, table.loc[table["device"] == d, "env"].nunique()) for d in devices]
    figure = Figure(figsize=(1.7 * sum(widths) + 1.6, 3.0))
    grid = figure.add_gridspec(1, len(devices), width_ratios=widths, wspace=0.18)
    strategies = [s for s in colours if s in set(table["strategy"])]
    for position, device in enumerate(devices):
        axes = figure.add_subplot(grid[0, position])
        _bars(axes, table[table["device"] == device], envs, strategies, colours)
        axes.set_title(plain_text("on " + device))
        axes.set_ylabel(plain_text(f"× {reference or 'reference'}") if position == 0 else "")
    handles = [Patch(color=colours[s], label=plain_text(s)) for s in strategies]
    figure.legend(handles=handles, loc="center right", frameon=False, title="strategy")
    figure.subplots_adjust(right=1 - 1.3 / figure.get_figwidth())
    return Chart(chart_id, title, caption, svg_text(figure, chart_id, title))


SHORT_KIND = {REFERENCE_EAGER: "vs eager", CHEAPEST: "vs cheapest"}


def _bars(
    axes: Axes, table: pd.DataFrame, envs: Sequence[str], strategies: Sequence[str], colours: Dict[str, str]
) -> None:
    present = [e for e in envs if e in set(table["env"])]
    width = 0.8 / max(len(strategies), 1)
    values = []
    for s_index, strategy in enumerate(strategies):
        for e_index, env in enumerate(present):
            hit = table[(table["env"] == env) & (table["strategy"] == strategy)]
            if hit.empty or hit["ratio"].iloc[0] is None:
                continue
            value = float(hit["ratio"].iloc[0])
            values.append(value)
            x = e_index - 0.4 + width * (s_index + 0.5)
            axes.bar([x], [value], width=width * 0.92, color=colours[strategy])
            axes.annotate(
                format_ratio(value),
                (x, value),
                ha="center",
                va="bottom",
                fontsize=6.5,
                xytext=(0, 1),
                textcoords="offset points",
            )
    labels = []
    for env in present:
        kind = main_kind(table.loc[table["env"] == env, "ref_kind"])
        labels.append(plain_text(env if kind not in SHORT_KIND else f"{env}\n({SHORT_KIND[kind]})"))
    axes.set_xticks(range(len(present)))
    axes.set_xticklabels(labels)
    axes.set_xlim(-0.6, max(len(present), 2) - 0.4)
    _log_ratio_axis(axes, values)
    axes.axhline(1.0, color="#444", linewidth=0.8, linestyle="--")
    axes.grid(axis="y", which="major", color="#ddd", linewidth=0.5)


NICE_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


def _log_ratio_axis(axes: Axes, values: Sequence[float]) -> None:
    """A log axis with ticks like 0.5×, 1×, 2×, 5×: plain numbers instead of powers of ten."""
    low, high = min(list(values) + [1.0]), max(list(values) + [1.0])
    axes.set_yscale("log")
    axes.set_ylim(low / 1.35, high * 1.6)
    ticks = [t for t in NICE_TICKS if low / 1.35 <= t <= high * 1.6]
    axes.yaxis.set_major_locator(FixedLocator(ticks))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    axes.yaxis.set_minor_formatter(NullFormatter())


def _accuracy_marks(
    axes: Axes, cells: pd.DataFrame, strategies: Sequence[str], present: Sequence[str], colours: Dict[str, str]
) -> None:
    """One mark per cell: filled when it passed, hollow when it mismatched; one column per strategy."""
    marks = dict(zip(present, ENV_MARKS))
    for s_index, strategy in enumerate(strategies):
        own = cells[cells["strategy"] == strategy]
        for e_index, env in enumerate(present):
            mine = own[own["env"] == env].sort_values(by="idx")
            # A fixed spread instead of random jitter keeps the picture identical from run to run.
            xs = [s_index + (e_index - (len(present) - 1) / 2) * 0.22 + ((i % 7) - 3) * 0.012 for i in range(len(mine))]
            ys = mine["max_abs"].clip(lower=ZERO_FLOOR).tolist()
            passed = (mine["verdict"] == Verdict.PASS.value).tolist()
            colour = colours[strategy]
            axes.scatter(
                [x for x, p in zip(xs, passed) if p],
                [y for y, p in zip(ys, passed) if p],
                s=12,
                marker=marks[env],
                color=colour,
                alpha=0.8,
                edgecolors="none",
            )
            axes.scatter(
                [x for x, p in zip(xs, passed) if not p],
                [y for y, p in zip(ys, passed) if not p],
                s=14,
                marker=marks[env],
                facecolors="none",
                edgecolors=colour,
                linewidths=1.0,
            )


def accuracy_chart(frame: pd.DataFrame, envs: Sequence[str], colours: Dict[str, str]) -> Chart:
    chart_id = "chart-accuracy"
    title = f"Largest absolute difference from eager PyTorch, {CHART_FAMILY} (log scale)"
    caption = (
        "One mark per cell that ran in onnxruntime: filled when it passed, hollow when it mismatched. An exact match "
        f"is drawn at {ZERO_FLOOR:g}. Dashed lines: the absolute tolerances (atol) the cells were judged against."
    )
    cells = frame[(frame["family"] == CHART_FAMILY) & frame["max_abs"].notna()]
    if cells.empty:
        return Chart(chart_id, title, caption, None, f"No {CHART_FAMILY} cell recorded a difference.")
    strategies = [s for s in colours if s in set(cells["strategy"])]
    present = [e for e in envs if e in set(cells["env"])]
    marks = dict(zip(present, ENV_MARKS))
    figure = Figure(figsize=(7.5, 3.0))
    axes = figure.add_subplot(1, 1, 1)
    _accuracy_marks(axes, cells, strategies, present, colours)
    for atol in sorted(set(cells["atol"].dropna().tolist())):
        axes.axhline(atol, color="#b00", linewidth=0.7, linestyle="--")
        axes.annotate(
            f"atol {atol:g}",
            (1.0, atol),
            xycoords=("axes fraction", "data"),
            fontsize=7,
            color="#b00",
            ha="right",
            va="bottom",
        )
    axes.set_yscale("log")
    axes.set_xticks(range(len(strategies)))
    axes.set_xticklabels([plain_text(s) for s in strategies])
    axes.set_ylabel("max |onnx − eager|")
    axes.grid(axis="y", color="#ddd", linewidth=0.5)
    handles = [Line2D([], [], linestyle="none", marker=marks[e], color="#555", label=plain_text(e)) for e in present]
    handles.append(
        Line2D([], [], linestyle="none", marker="o", markerfacecolor="none", markeredgecolor="#555", label="mismatch")
    )
    axes.legend(handles=handles, title="environment", frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return Chart(chart_id, title, caption, svg_text(figure, chart_id, title))


def build_charts(frame: pd.DataFrame, envs: Sequence[str], strategies: Sequence[str]) -> List[Chart]:
    with matplotlib.rc_context(RC):
        colours = strategy_colours(strategies)
        return [
            cost_chart(frame, "latency", envs, colours),
            cost_chart(frame, "memory", envs, colours),
            accuracy_chart(frame, envs, colours),
        ]
