"""Charts: the numbers behind the bars, and SVG text that is safe and tidy to inline."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
from matplotlib.figure import Figure

from harness.report.charts import build_charts, cost_summary, svg_text
from harness.report.costs import CHEAPEST, REFERENCE_ORT
from harness.report.load import load
from harness.report.table import build_frame

RECORDS = Path(__file__).parent / "resources" / "records"
ENVS = ["torch1.8", "torch1.12", "torch2"]
STRATEGIES = ["native", "custom", "mmcv", "naive", "contrib"]


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return build_frame(load([str(RECORDS)]).records)


def test_cost_summary_is_relative_to_the_reference_where_it_passes(frame: pd.DataFrame) -> None:
    table = cost_summary(frame, "latency", ENVS)
    torch2 = table[(table["env"] == "torch2") & (table["device"] == "cpu")].set_index("strategy")
    assert set(torch2["ref_kind"]) == {REFERENCE_ORT}
    assert "native" not in torch2.index  # grid_sample's reference, as its records name it
    # The fixtures' speeds: contrib runs onnxruntime's own kernel, about as fast as native; the rewrites 3-5x slower.
    assert 0.9 < torch2.at["contrib", "ratio"] < 1.2
    assert 3.5 < torch2.at["custom", "ratio"] < 5.5
    torch18 = table[table["env"] == "torch1.8"]
    assert set(torch18["ref_kind"]) == {CHEAPEST}  # native never exports on torch 1.8


def test_charts_are_inline_svg_without_prolog_comments_or_clashing_ids(frame: pd.DataFrame) -> None:
    charts = build_charts(frame, ENVS, STRATEGIES)
    assert [c.id for c in charts] == ["chart-latency", "chart-memory", "chart-accuracy"]
    assert charts[0].title.startswith("Latency relative to the family's reference (native for grid_sample)")
    for chart in charts:
        svg = chart.svg
        assert svg is not None and svg.startswith('<svg role="img" aria-label=')
        assert "<?xml" not in svg and "<!DOCTYPE" not in svg and "<!--" not in svg and "<metadata" not in svg
        assert 'width="' not in svg.split(">", 1)[0]  # sized by CSS
        ids = re.findall(r'\bid="([^"]+)"', svg)
        assert ids and all(i.startswith(chart.id + "-") for i in ids)
        assert all(ref.startswith(chart.id + "-") for ref in re.findall(r"url\(#([^)]+)\)", svg))
    assert ">torch1.8<" in charts[0].svg or "torch1.8" in charts[0].svg
    assert ">custom<" in charts[2].svg


def test_charts_say_why_when_there_is_nothing_to_draw(frame: pd.DataFrame) -> None:
    charts = build_charts(frame[frame["family"] == "gelu"], ENVS, ["native"])
    assert [c.svg for c in charts] == [None, None, None]
    assert all(c.note for c in charts)


def test_svg_text_escapes_hostile_labels() -> None:
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        figure = Figure(figsize=(2, 1))
        axes = figure.add_subplot(1, 1, 1)
        axes.set_title("<script>alert(1)</script> -->")
        svg = svg_text(figure, "chart-x", 'a "quoted" <title>')
    assert "<script" not in svg
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    assert 'aria-label="a &quot;quoted&quot; &lt;title&gt;"' in svg
