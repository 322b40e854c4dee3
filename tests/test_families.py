"""The families beyond grid_sample through the real exporters and onnxruntime, in this (the torch2) environment:
the facts each family's matrix is there to show."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from harness.campaign.options import Options
from harness.plan.applicable import not_applicable_reason
from harness.plan.registry import all_cases, get_case, load_cases
from harness.plan.spec import CellSpec, canonical_params
from harness.strategies import CUSTOM_DOMAIN, get_strategy
from harness.strategies.resize import interpolate
from harness.worker.executor import CellExecutor
from harness.worker.fingerprint import collect

load_cases()
ENV = collect("testenv")
OPTS = Options(threads=2, latency=False, memory=False)


def cell(case, strategy, opset, exporter="torchscript", shape_mode="static", params=None, **overrides):
    """A cell of `case`: its first params with `overrides`, or exactly `params`."""
    c = get_case(case)
    base = dict(c.params[0]) if params is None else dict(params)
    base.update(overrides)
    return CellSpec(
        "testenv", c.family, case, canonical_params(base), strategy, opset, exporter, shape_mode, "cpu", "float32"
    )


def run(spec):
    """The cell through the worker\'s own executor, as its JSON record."""
    return CellExecutor("testenv", (), OPTS).execute(spec).to_json()


def ops(record):
    return record["export"]["op_types"]


# layernorm


def test_layernorm_is_one_node_only_from_opset_17():
    below = run(cell("layernorm", "native", 13))
    assert below["verdict"] == "pass", below["reason"]
    assert "LayerNormalization" not in ops(below) and ops(below)["ReduceMean"] == 2
    at17 = run(cell("layernorm", "native", 17))
    assert at17["verdict"] == "pass", at17["reason"]
    assert ops(at17) == {"LayerNormalization": 1}


def test_the_layernorm_decomposition_keeps_its_graph_at_17():
    record = run(cell("layernorm", "decomposed", 17, normalized="last2"))
    assert record["verdict"] == "pass", record["reason"]
    assert "LayerNormalization" not in ops(record) and record["parity"]["max_abs"] < 1e-5


# gelu


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_is_one_node_only_from_opset_20(approximate):
    at17 = run(cell("gelu", "native", 17, approximate=approximate))
    assert at17["verdict"] == "pass", at17["reason"]
    assert "Gelu" not in ops(at17) and ("Erf" if approximate == "none" else "Tanh") in ops(at17)
    at20 = run(cell("gelu", "native", 20, approximate=approximate))
    assert at20["verdict"] == "pass", at20["reason"]
    assert ops(at20) == {"Gelu": 1}


def test_custom_domain_gelu_exports_one_node_that_onnxruntime_cannot_load():
    record = run(cell("gelu", "custom_op", 13))
    assert record["verdict"] == "load_failed", record
    assert ops(record) == {"custom::Gelu": 1} and "custom" in record["export"]["domains"]
    assert get_strategy("gelu", "custom_op").portability == CUSTOM_DOMAIN
    after = run(cell("gelu", "native", 20))  # the symbolic was scoped to that export
    assert ops(after) == {"Gelu": 1}


def test_custom_symbolics_are_torchscript_only():
    spec = cell("gelu", "custom_op", 20, exporter="dynamo")
    reason = not_applicable_reason(spec, get_strategy("gelu", "custom_op"), ENV)
    assert reason and "TorchScript" in reason


# control flow


def test_tracing_freezes_the_branch_and_the_variant_shows_it():
    record = run(cell("data_dependent_branch", "traced", 11))
    assert record["verdict"] == "mismatch", record
    assert "input variant 1" in record["reason"]
    assert record["eager_parity"]["max_abs"] == 0.0  # eager is right; the frozen graph is not
    assert record["reference"] == "eager"  # what it was compared against, named in the record for the page


@pytest.mark.parametrize("strategy, op_type", [("scripted", "If"), ("arithmetic", "Where")])
def test_scripting_and_where_keep_both_sides(strategy, op_type):
    record = run(cell("data_dependent_branch", strategy, 11))
    assert record["verdict"] == "pass", record["reason"]
    assert ops(record).get(op_type) == 1
    assert record["parity"]["shapes_checked"] == 2  # the export input and the other branch's variant


def test_dynamo_refuses_the_data_dependent_branch():
    record = run(cell("data_dependent_branch", "traced", 18, exporter="dynamo"))
    assert record["verdict"] == "export_failed", record
    export = next(s for s in record["stages"] if s["name"] == "export")
    assert "data-dependent" in export["message"]


def test_the_eager_reference_is_not_a_cell():
    spec = cell("data_dependent_branch", "eager", 11)
    assert "traced" in not_applicable_reason(spec, get_strategy("control_flow", "eager"), ENV)


# resize


SCALE2, SIZE = {"scale_factor": 2.0}, {"size": [17, 23]}


def test_opset_10_resize_cannot_say_half_pixel_or_align_corners():
    half_pixel = run(cell("resize_op", "native", 10, params=dict(SCALE2, mode="bilinear", align_corners=False)))
    assert half_pixel["verdict"] == "mismatch" and half_pixel["parity"]["max_abs"] > 0.1
    corners = run(cell("resize_op", "native", 10, params=dict(SIZE, mode="bilinear", align_corners=True)))
    assert corners["verdict"] == "export_failed" and "align_corners" in corners["reason"]
    cubic = run(cell("resize_op", "native", 10, params=dict(SIZE, mode="bicubic", align_corners=False)))
    assert cubic["verdict"] == "export_failed"
    nearest = run(cell("resize_op", "native", 10, params=dict(SIZE, mode="nearest")))
    assert nearest["verdict"] == "pass"  # asymmetric + floor: what opset 10 can say, and what torch does
    for params in (dict(SCALE2, mode="bilinear", align_corners=False), dict(SIZE, mode="bicubic", align_corners=False)):
        assert run(cell("resize_op", "native", 11, params=params))["verdict"] == "pass"


@pytest.mark.parametrize("index", range(8))
@pytest.mark.parametrize("opset", [10, 17])
def test_the_separable_rewrite_passes_at_every_opset(index, opset):
    params = get_case("resize_op").params[index]
    record = run(cell("resize_op", "separable", opset, params=params))
    assert record["verdict"] == "pass", record["reason"]
    assert "Resize" not in ops(record) and record["parity"]["max_abs"] < 1e-5


def test_nearest_exact_exports_only_through_dynamo_or_the_rewrite():
    torchscript = run(cell("resize_op", "native", 17, params=dict(SIZE, mode="nearest-exact")))
    assert torchscript["verdict"] == "export_failed"
    assert run(cell("resize_dynamo", "native", 18, exporter="dynamo"))["verdict"] == "pass"


@pytest.mark.parametrize(
    "mode, align",
    [
        ("nearest", None),
        ("nearest-exact", None),
        ("bilinear", False),
        ("bilinear", True),
        ("bicubic", False),
        ("bicubic", True),
    ],
)
@pytest.mark.parametrize("how", [{"size": (5, 31)}, {"size": (13, 4)}, {"scale_factor": (1.7, 0.6)}])
def test_separable_interpolate_matches_torch_eagerly(mode, align, how):
    x = torch.randn(2, 3, 9, 11)
    got = interpolate(x, mode=mode, align_corners=align, **how)
    want = F.interpolate(x, mode=mode, align_corners=align, **how)
    assert got.shape == want.shape
    assert (got - want).abs().max().item() < 1e-5


# grid_sample in real models


@pytest.mark.parametrize("case", ["flow_warp", "deformable_sampling"])
@pytest.mark.parametrize("opset", [11, 16])
def test_real_models_export_with_dynamic_shapes_through_the_rewrite(case, opset):
    record = run(cell(case, "custom", opset, shape_mode="dynamic"))
    assert record["verdict"] == "pass", record["reason"]
    assert record["parity"]["shapes_checked"] == 3
    assert "GridSample" not in ops(record)


def test_the_torchvision_case_exists_only_where_torchvision_imports():
    try:
        import torchvision.transforms.functional  # noqa: F401

        present = True
    except Exception:
        present = False
    names = {c.name for c in all_cases()}
    assert ("torchvision_affine" in names) == present


# affine_grid


def test_the_tutorial_stn_needs_affine_grid_rewritten_below_opset_20():
    below = min(17, ENV.max_opset)  # the newest opset below affine_grid_generator's 20 that this torch writes
    alone = run(cell("stn_tutorial", "custom", below, affine_grid="native"))
    assert alone["verdict"] == "export_failed" and "affine_grid_generator" in alone["reason"], alone["reason"]
    both = run(cell("stn_tutorial", "mmcv", below, affine_grid="custom"))
    assert both["verdict"] == "pass", both["reason"]
    assert both["operators"] == {"grid_sample": "mmcv", "affine_grid": "custom"}
    assert both["parity"]["max_abs"] < 1e-5


def test_torch_exports_affine_grid_itself_from_opset_20():
    if ENV.max_opset < 20:
        pytest.skip(f"torch {ENV.torch} exports opsets up to {ENV.max_opset}")
    native = run(cell("affine_grid_op_3d", "native", 20))
    assert native["verdict"] == "pass", native["reason"]
    assert "AffineGrid" in ops(native)
    custom = run(cell("affine_grid_op_3d", "custom", 11, shape_mode="dynamic"))
    assert custom["verdict"] == "pass", custom["reason"]
    assert "AffineGrid" not in ops(custom) and custom["parity"]["shapes_checked"] == 3
