"""Real models through the real exporter and onnxruntime, in this (the torch2) environment."""

from __future__ import annotations

import os

import pytest
import torch
from conftest import RESOURCES

from harness.campaign.options import NOT_COSTED, Options
from harness.judge.graph import describe_model
from harness.plan.registry import get_case, load_cases
from harness.plan.spec import CellSpec, canonical_params
from harness.strategies import get_strategy
from harness.worker.executor import CellExecutor
from harness.worker.export import export_onnx
from harness.worker.fingerprint import collect

load_cases()
ENV = collect("testenv")
OPTS = Options(threads=2, latency=False, memory=False)


def cell(case="grid_sample_op", strategy="native", opset=16, exporter="torchscript", shape_mode="static", **params):
    c = get_case(case)
    base = dict(c.params[0])
    base.update(params)
    return CellSpec(
        "testenv", c.family, case, canonical_params(base), strategy, opset, exporter, shape_mode, "cpu", "float32"
    )


def run(spec, opts=OPTS):
    """The cell through the worker\'s own executor, as its JSON record."""
    return CellExecutor("testenv", (), opts).execute(spec).to_json()


def stage(record, name):
    return next(s for s in record["stages"] if s["name"] == name)


def test_native_passes_at_opset_16_with_every_stage_recorded():
    record = run(cell(opset=16))
    assert record["verdict"] == "pass", record
    assert record["actual_opset"] == 16
    assert record["parity"]["max_abs"] < 1e-5
    assert record["export"]["op_types"].get("GridSample") == 1
    assert [s["outcome"] for s in record["stages"][:8]] == ["ok"] * 8


def test_native_below_16_fails_at_export_with_torchs_message():
    record = run(cell(opset=11))
    assert record["verdict"] == "export_failed"
    export = stage(record, "export")
    assert export["outcome"] == "failed" and "grid_sampler" in export["message"]
    assert stage(record, "load")["outcome"] == "skipped"


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_contrib_runs_in_onnxruntime_with_exact_parity(mode, padding):
    record = run(cell(strategy="contrib", opset=11, mode=mode, padding_mode=padding))
    if (mode, padding) == ("nearest", "reflection"):
        # onnxruntime's kernel rounds a half-pixel tie reflected from beyond the border otherwise than torch:
        # the case's 16-pixel-high input makes those ties exact, and a whole pixel apart shows
        assert record["verdict"] == "mismatch" and record["parity"]["max_abs"] > 0.5, record["parity"]
    else:
        assert record["verdict"] == "pass", record["reason"]
        assert record["parity"]["max_abs"] < 1e-5
    assert record["export"]["op_types"] == {"com.microsoft::GridSample": 1}
    assert "com.microsoft" in record["export"]["domains"]


def test_contrib_symbolic_does_not_leak_into_later_exports():
    run(cell(strategy="contrib", opset=16))
    model = get_case("grid_sample_op").model(get_case("grid_sample_op").params[0], torch.nn.functional.grid_sample)
    x, grid = torch.randn(1, 1, 4, 4), torch.rand(1, 3, 3, 2) * 2 - 1
    blob = export_onnx(
        model, (x, grid), opset=16, exporter="torchscript", input_names=["input", "grid"], output_names=["output"]
    )
    assert describe_model(blob)["op_types"] == {"GridSample": 1}


def test_naive_shows_its_border_error_and_custom_does_not():
    naive = run(cell(strategy="naive", opset=16, padding_mode="zeros"))
    assert naive["verdict"] == "mismatch"
    assert naive["eager_parity"]["max_abs"] > 0.1
    custom = run(cell(strategy="custom", opset=16, padding_mode="zeros"))
    assert custom["verdict"] == "pass" and custom["parity"]["max_abs"] < 1e-5


def test_dynamo_below_its_floor_is_opset_drift_not_pass():
    record = run(cell(case="grid_sample_dynamic", strategy="native", opset=11, exporter="dynamo", shape_mode="dynamic"))
    assert record["verdict"] == "opset_drift", record
    assert record["actual_opset"] != 11
    assert "asked for opset 11" in record["reason"]


def test_dynamic_cells_run_at_three_shapes():
    record = run(cell(case="grid_sample_dynamic", strategy="custom", opset=16, shape_mode="dynamic"))
    assert record["verdict"] == "pass", record["reason"]
    assert record["parity"]["shapes_checked"] == 3
    assert stage(record, "dynamic")["outcome"] == "ok"


def test_the_stn_exports_with_dynamic_batch_and_size():
    record = run(
        cell(case="stn", strategy="custom", opset=16, shape_mode="dynamic", mode="bilinear", padding_mode="zeros")
    )
    assert record["verdict"] == "pass", record["reason"]
    assert record["parity"]["shapes_checked"] == 3


def test_a_graph_with_a_baked_shape_fails_the_dynamic_stage_visibly():
    load_cases([str(RESOURCES / "cases_shapes")])
    record = run(cell(case="baked_batch", strategy="native", opset=16, shape_mode="dynamic"))
    assert record["verdict"] in ("run_failed", "mismatch"), record
    dynamic = stage(record, "dynamic")
    assert dynamic["outcome"] == "failed"
    assert stage(record, "parity")["outcome"] == "ok"  # the export shape itself is fine


def test_a_correctness_sweeps_cells_are_judged_and_costed_only_when_asked():
    """grid_sample_op sweeps parameters on toy inputs (tag sweep): its cells are judged, their latency and memory
    stages skipped with the reason (the framework's per-call overhead is all a toy input times)."""
    judged = run(cell(strategy="custom", opset=16), Options(threads=2, latency_budget_s=0.02))
    assert judged["verdict"] == "pass" and judged["parity"]["max_abs"] < 1e-4
    assert judged["latency"] == {} and judged["memory"] == {}
    for name in ("latency", "memory"):
        assert stage(judged, name)["outcome"] == "skipped" and stage(judged, name)["message"] == NOT_COSTED
    assert "sweep" in get_case("grid_sample_op").tags and "sweep" not in get_case("grid_sample_bench").tags


def test_latency_and_memory_are_recorded_for_both_targets():
    record = run(cell(strategy="custom", opset=16), Options(threads=2, latency_budget_s=0.02, cost_sweeps=True))
    for target in ("eager", "ort"):
        lat = record["latency"][target]
        assert lat["median_s"] > 0 and lat["samples"] >= 5 and lat["threads"] == 2
        footprint, working = record["memory"][target], record["memory"][target + ".working_set"]
        assert footprint["peak_bytes"] > 0 and working["peak_bytes"] is not None
    assert record["memory"]["eager"]["method"] == "parameters and buffers, plus one call's rss-hwm growth"
    assert record["memory"]["ort"]["method"] == "rss-hwm: from before the session is created through its first run"
    assert record["memory"]["ort.working_set"]["method"] == "rss-hwm: one run with the arena off, after a warm-up run"


MMCV_BLOCKED = os.environ.get("HARNESS_MMCV_UNAVAILABLE")


@pytest.mark.skipif(bool(MMCV_BLOCKED), reason=f"mmcv unavailable in this environment: {MMCV_BLOCKED}")
@pytest.mark.parametrize("align", [False, True])
def test_mmcv_adapter_against_the_real_mmcv(align):
    reason = get_strategy("grid_sample", "mmcv").unavailable(ENV)
    assert reason is None, f"mmcv must import in the tests environment: {reason}"
    record = run(cell(strategy="mmcv", opset=11, mode="bilinear", padding_mode="zeros", align_corners=align))
    assert record["verdict"] == "pass", record["reason"]
    assert record["parity"]["max_abs"] < 1e-5
    assert record["export"]["op_types"].get("GridSample") is None
    unsupported = get_strategy("grid_sample", "mmcv").unsupported(cell(strategy="mmcv", mode="bicubic"), ENV)
    assert "bilinear" in unsupported
