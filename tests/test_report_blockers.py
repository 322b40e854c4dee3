"""The advice names the other operator that blocks an export, and the page measures export time per strategy."""

from __future__ import annotations

from collections import namedtuple

import pandas as pd

from harness.report.blockers import blocking_operator, blocking_operators
from harness.report.export_time import export_ratios, export_times

RESIZE = (
    "export: RuntimeError: Unsupported: ONNX export of operator upsample_bilinear2d, align_corners == True. "
    "Please feel free to request support or submit a pull request on PyTorch GitHub."
)
GRID = (
    "export: UnsupportedOperatorError: Exporting the operator ::grid_sampler to ONNX opset version 9 is not supported."
)
INVERSE = "export: UnsupportedOperatorError: Exporting the operator 'aten::linalg_inv' to ONNX opset version 16 is not"

Row = namedtuple("Row", "case strategy verdict reason opset family")


def test_the_failing_operator_is_read_from_the_exporters_message():
    assert blocking_operator(RESIZE) == "upsample_bilinear2d, align_corners == True"
    assert blocking_operator(INVERSE) == "linalg_inv"
    assert blocking_operator(GRID) is None  # the family's own: the strategies are what handles it
    assert blocking_operator("parity: max_abs 3.1") is None


def test_raft_at_opset_9_names_resize_not_grid_sample():
    rows = [Row("raft_small", "native", "export_failed", GRID, 9, "grid_sample")]
    rows += [Row("raft_small", s, "export_failed", RESIZE, 9, "grid_sample") for s in ("custom", "mmcv", "contrib")]
    (said,) = blocking_operators(rows)
    assert said.startswith("raft_small: upsample_bilinear2d, align_corners == True blocks the export for contrib, ")
    assert "at opset 9, not grid_sample" in said and "ONNX Resize" in said and "opset 11" in said
    everyone = [Row("kornia_warp_perspective", s, "export_failed", INVERSE, 16, "grid_sample") for s in ("a", "b")]
    assert "every strategy tried" in blocking_operators(everyone)[0]
    assert blocking_operators([Row("resize_op", "native", "export_failed", RESIZE, 9, "resize")]) == ()


def _frame():
    base = dict(env="torch1.12", family="grid_sample", case="raft_small", params="{}", exporter="torchscript")
    base.update(shape_mode="static", device="cpu", dtype="float32", kind="export", reference="native")
    rows = []
    for opset, seconds in ((11, {"native": None, "custom": 8.0}), (16, {"native": 4.0, "custom": 6.0, "mmcv": 10.0})):
        for strategy, value in seconds.items():
            rows.append(dict(base, opset=opset, strategy=strategy, export_s=value))
    return pd.DataFrame(rows)


def test_export_time_is_per_strategy_and_against_the_reference_on_the_same_cells():
    times = export_times(_frame(), ["torch1.12"])
    by = {r.strategy: r for r in times.rows}
    assert by["native"].versus == "reference" and by["native"].median == "4.00 s"
    assert by["custom"].cells == 2 and by["custom"].median == "7.00 s"
    assert by["custom"].versus == "1.50×"  # only opset 16, where native exported too
    assert by["mmcv"].versus == "2.50×" and by["mmcv"].slowest == "raft_small 10.00 s"
    ratios = export_ratios(_frame())
    assert ratios[("torch1.12", "16", "grid_sample", "custom", "torchscript")] == 1.5
    assert ratios[("torch1.12", "11", "grid_sample", "custom", "torchscript")] is None
