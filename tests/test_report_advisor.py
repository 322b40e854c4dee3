"""The advisor's ranking: pass rate, then portability, then latency, then memory; pure functions over a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pandas as pd
import pytest

from harness.record import CellRecord
from harness.report.advisor import Candidate, advise, explain, rank
from harness.report.costs import CHEAPEST, REFERENCE_EAGER, REFERENCE_ORT, best_reference_only, geomean, with_ratios
from harness.report.table import build_frame

RECORDS = Path(__file__).parent / "resources" / "records"

PORTABILITY = {
    "native": "standard",
    "custom": "standard",
    "mmcv": "standard",
    "contrib": "ort_contrib",
    "plugin": "custom_domain",
}
COMBOS = [{"mode": "bilinear"}, {"mode": "bicubic"}]


def rec(
    strategy: str,
    params: Dict[str, Any],
    verdict: str = "pass",
    ort: Optional[float] = None,
    eager: Optional[float] = None,
    mem: Optional[float] = None,
    exporter: str = "torchscript",
    env: str = "torch1.8",
    opset: int = 11,
) -> Dict[str, Any]:
    latency = {
        k: {"median_s": v, "iqr_s": 0.0, "samples": 10, "number": 1, "threads": 2, "noisy": False}
        for k, v in (("ort", ort), ("eager", eager))
        if v
    }
    return {
        "schema_version": 4,
        "reference": "native",
        "runtime": {"name": "onnxruntime", "version": "1.10.0"},
        "precision": "fp32",
        "env": env,
        "family": "grid_sample",
        "case": "op",
        "params": params,
        "strategy": strategy,
        "portability": PORTABILITY[strategy],
        "opset": opset,
        "actual_opset": opset,
        "exporter": exporter,
        "shape_mode": "static",
        "device": "cpu",
        "dtype": "float32",
        "verdict": verdict,
        "stages": [],
        "latency": latency or None,
        "memory": {"ort": {"peak_bytes": mem, "method": "rss"}} if mem else None,
        "finished_at": "2026-11-29T17:15:00Z",
    }


def frame_of(records: List[Dict[str, Any]]) -> pd.DataFrame:
    return build_frame([CellRecord.from_json(r) for r in records])


def ranked(records: List[Dict[str, Any]]) -> List[Candidate]:
    advice = advise(frame_of(records))
    assert len(advice) == 1
    return list(advice[0].ranked)


def names(candidates: List[Candidate]) -> List[str]:
    return [c.strategy for c in candidates]


def test_pass_rate_comes_before_portability() -> None:
    records = [rec("plugin", p, ort=1.0) for p in COMBOS] + [
        rec("custom", COMBOS[0], ort=0.5),
        rec("custom", COMBOS[1], "mismatch"),
    ]
    result = ranked(records)
    assert names(result) == ["plugin", "custom"]
    assert (result[0].passed, result[0].counted, result[1].passed) == (2, 2, 1)
    assert [(f.params, f.verdict) for f in result[1].failures] == [('{"mode":"bicubic"}', "mismatch")]


def test_portability_comes_before_latency() -> None:
    records = [rec("contrib", p, ort=0.001) for p in COMBOS] + [rec("custom", p, ort=0.004) for p in COMBOS]
    result = ranked(records)
    assert names(result) == ["custom", "contrib"]
    assert explain(result) == (
        "custom (torchscript) passes 2/2 combinations with standard ops; "
        "contrib (torchscript) passes as many but needs ORT contrib ops"
    )


def test_latency_relative_to_native_then_memory_decide_among_equals() -> None:
    native = [rec("native", p, ort=0.002, mem=100.0) for p in COMBOS]
    records = (
        native
        + [rec("custom", p, ort=0.004, mem=300.0) for p in COMBOS]
        + [rec("mmcv", p, ort=0.006, mem=100.0) for p in COMBOS]
    )
    result = ranked(records)
    assert names(result) == ["native", "custom", "mmcv"]
    assert result[1].latency == pytest.approx(2.0) and result[2].latency == pytest.approx(3.0)
    assert result[1].latency_s == pytest.approx(0.004)
    # Same latency: the leaner one first.
    records = (
        native
        + [rec("custom", p, ort=0.004, mem=300.0) for p in COMBOS]
        + [rec("mmcv", p, ort=0.004, mem=200.0) for p in COMBOS]
    )
    result = ranked(records)
    assert names(result) == ["native", "mmcv", "custom"]
    assert "less memory than custom (torchscript) (2.00× vs 3.00× native ORT footprint)" in explain(
        result[1:], "native ORT", "native ORT"
    )


def test_a_harness_error_counts_neither_way_and_a_missing_combo_counts_against() -> None:
    records = [
        rec("custom", COMBOS[0], ort=0.002),
        rec("custom", COMBOS[1], "harness_error"),
        rec("mmcv", COMBOS[0], ort=0.001),
    ]
    result = ranked(records)
    custom = next(c for c in result if c.strategy == "custom")
    mmcv = next(c for c in result if c.strategy == "mmcv")
    assert (custom.passed, custom.counted, custom.harness_errors, custom.pass_rate) == (1, 1, 1, 1.0)
    assert (mmcv.passed, mmcv.counted, mmcv.pass_rate) == (1, 2, 0.5)
    assert [f.verdict for f in mmcv.failures] == ["missing"]
    assert names(result) == ["custom", "mmcv"]


def test_exporters_are_separate_candidates() -> None:
    records = [rec("native", p, "opset_drift", exporter="dynamo") for p in COMBOS] + [
        rec("native", p, ort=0.001) for p in COMBOS
    ]
    result = ranked(records)
    assert [(c.strategy, c.exporter, c.passed) for c in result] == [
        ("native", "torchscript", 2),
        ("native", "dynamo", 0),
    ]


def test_when_nothing_passes_there_is_no_pick() -> None:
    advice = advise(frame_of([rec("native", p, "export_failed") for p in COMBOS]))[0]
    assert advice.pick is None
    assert advice.why == "nothing passes here"


def test_groups_are_per_environment_runtime_opset_device_family_and_precision() -> None:
    records = [rec("native", COMBOS[0], ort=0.001, env=e, opset=o) for e in ("torch1.8", "torch2") for o in (11, 16)]
    replay = dict(records[0], runtime={"name": "openvino", "version": "2026.4.1", "env": "openvino2026"}, kind="replay")
    int8 = dict(replay, precision="int8-dynamic", converter="onnxruntime 1.32.0 quantization")
    advice = advise(frame_of(records + [replay, int8]))
    assert [a.key for a in advice] == [
        ("torch1.8", "OpenVINO 2026.4.1", 11, "cpu", "grid_sample", "fp32"),
        ("torch1.8", "OpenVINO 2026.4.1", 11, "cpu", "grid_sample", "int8-dynamic"),
        ("torch1.8", "onnxruntime 1.10.0", 11, "cpu", "grid_sample", "fp32"),
        ("torch1.8", "onnxruntime 1.10.0", 16, "cpu", "grid_sample", "fp32"),
        ("torch2", "onnxruntime 1.10.0", 11, "cpu", "grid_sample", "fp32"),
        ("torch2", "onnxruntime 1.10.0", 16, "cpu", "grid_sample", "fp32"),
    ]
    assert [a.home for a in advice] == [False, False, True, True, True, True]  # a converted graph: replays only


def test_references_fall_back_from_native_ort_to_native_eager_to_the_cheapest() -> None:
    with_eager = [rec("native", p, "export_failed", eager=0.001) for p in COMBOS] + [
        rec("custom", p, ort=0.003) for p in COMBOS
    ]
    ratios = with_ratios(frame_of(with_eager), "latency")
    assert (set(ratios["ref_kind"]), set(ratios["ref_label"])) == ({REFERENCE_EAGER}, {"native eager"})
    assert list(ratios["ratio"]) == pytest.approx([3.0, 3.0])
    without = [rec("mmcv", p, ort=0.002) for p in COMBOS] + [rec("custom", p, ort=0.003) for p in COMBOS]
    ratios = with_ratios(frame_of(without), "latency")
    assert (set(ratios["ref_kind"]), set(ratios["ref_label"])) == ({CHEAPEST}, {"cheapest strategy"})
    assert sorted(ratios["ratio"]) == pytest.approx([1.0, 1.0, 1.5, 1.5])


def test_the_reference_is_the_one_each_record_names_not_native_by_name() -> None:
    # A family whose reference is "mmcv": native is just another strategy there.
    records = [
        dict(rec(s, p, ort=t), reference="mmcv") for s, t in (("native", 0.001), ("mmcv", 0.002)) for p in COMBOS
    ]
    ratios = with_ratios(frame_of(records), "latency")
    assert (set(ratios["ref_kind"]), set(ratios["ref_label"])) == ({REFERENCE_ORT}, {"mmcv ORT"})
    assert sorted(ratios["ratio"]) == pytest.approx([0.5, 0.5, 1.0, 1.0])


def test_a_group_mixing_references_keeps_only_the_best_one() -> None:
    records = [
        rec("native", COMBOS[0], ort=0.001),
        rec("native", COMBOS[1], "mismatch"),
        rec("custom", COMBOS[0], ort=0.004),
        rec("custom", COMBOS[1], ort=0.1),
    ]
    ratios = best_reference_only(with_ratios(frame_of(records), "latency"), ["env"])
    assert set(ratios["ref_kind"]) == {REFERENCE_ORT}
    custom = next(c for c in ranked(records) if c.strategy == "custom")
    assert custom.latency == pytest.approx(4.0)


def test_rank_is_stable_by_name_on_a_full_tie() -> None:
    records = [rec(s, p, ort=0.001) for s in ("mmcv", "custom") for p in COMBOS]
    result = ranked(records)
    assert names(result) == ["custom", "mmcv"]
    assert names(rank(list(reversed(result)))) == ["custom", "mmcv"]
    assert explain(result).endswith("level with mmcv (torchscript) on every criterion (ordered by name)")


def test_geomean_ignores_what_cannot_be_averaged() -> None:
    assert geomean([2.0, 0.5, None, 0.0, float("nan")]) == pytest.approx(1.0)
    assert geomean([]) is None


def test_a_candidate_that_never_applies_is_not_ranked() -> None:
    records = (
        [rec("native", p, "not_applicable", exporter="dynamo") for p in COMBOS]
        + [rec("native", p, ort=0.001) for p in COMBOS]
        + [rec("custom", COMBOS[0], "mismatch"), rec("custom", COMBOS[1], "not_applicable")]
    )
    advice = advise(frame_of(records))[0]
    assert [(c.strategy, c.exporter) for c in advice.ranked] == [("native", "torchscript"), ("custom", "torchscript")]
    assert [(c.strategy, c.exporter) for c in advice.inapplicable] == [("native", "dynamo")]


def test_a_group_where_nothing_applies_says_so() -> None:
    from harness.report.upgrade import side

    advice = advise(frame_of([rec("mmcv", p, "not_applicable") for p in COMBOS]))[0]
    assert advice.ranked == () and advice.pick is None
    assert advice.why == "nothing applies here"
    assert side(advice).state == "not_applicable"


def control_flow_key(strategy: str) -> Dict[str, Any]:
    """One cell of the fixtures' control_flow key (torch2, loop_scan scripted, opset 11), as the worker writes it
    now (schema 2): the reference named, the runtime and precision recorded, each timing with its block size."""
    for line in (RECORDS / "torch2.jsonl").read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        wanted = ("loop_scan", 11, {"variant": "scripted", "steps": 4}, strategy)
        if (data["case"], data["opset"], data["params"], data["strategy"]) == wanted:
            for timing in data["latency"].values():
                timing["number"] = 1
            runtime = {"name": "onnxruntime", "version": data["fingerprint"]["onnxruntime"]}
            return dict(data, schema_version=4, reference="eager", runtime=runtime, precision="fp32", env_limits={})
    raise LookupError(strategy)


def with_reference_target(data: Dict[str, Any], seconds: float, peak: int) -> Dict[str, Any]:
    """The reference (eager PyTorch for control_flow) measured beside the cell, with the same timer."""
    timing = dict(data["latency"]["eager"], median_s=seconds)
    latency = dict(data["latency"], reference=timing)
    memory = dict(data["memory"], reference=dict(data["memory"]["eager"], peak_bytes=peak))
    return dict(data, latency=latency, memory=memory)


def control_flow_cells(with_target: bool) -> List[Dict[str, Any]]:
    cells = [control_flow_key(s) for s in ("script", "trace", "custom_op")]
    if with_target:
        targets = [(1.0e-4, 100_000_000), (1.2e-4, 120_000_000), (1.1e-4, 110_000_000)]
        cells = [with_reference_target(c, t, m) for c, (t, m) in zip(cells, targets)]
    # The reference's own cell: eager is not a graph, so it is never exported nor measured in onnxruntime.
    eager = dict(cells[0], strategy="eager", verdict="not_applicable", latency=None, memory=None, parity=None)
    return cells + [dict(eager, reason="the reference itself: eager PyTorch is not exported")]


def test_control_flow_costs_are_relative_to_the_references_eager_timing() -> None:
    frame = frame_of(control_flow_cells(with_target=True))
    ratios = with_ratios(frame, "latency").set_index("strategy")
    assert set(ratios["ref_kind"]) == {REFERENCE_EAGER} and set(ratios["ref_label"]) == {"eager PyTorch"}
    assert list(ratios["ref"]) == pytest.approx([1.1e-4] * 3)  # the median of the three cells' reference targets
    assert ratios.at["script", "ratio"] == pytest.approx(0.0001451 / 1.1e-4)
    assert ratios.at["custom_op", "ratio"] == pytest.approx(0.0001385 / 1.1e-4)
    memory = with_ratios(frame, "memory").set_index("strategy")
    assert memory.at["trace", "ratio"] == pytest.approx(148207828 / 110_000_000)
    advice = advise(frame)
    assert [(a.family, a.latency_ref, a.memory_ref) for a in advice] == [
        ("control_flow", "eager PyTorch", "eager PyTorch")
    ]
    custom = next(c for c in advice[0].ranked if c.strategy == "custom_op")
    assert custom.latency == pytest.approx(0.0001385 / 1.1e-4)


def test_control_flow_without_the_reference_target_falls_back_to_the_cheapest() -> None:
    ratios = with_ratios(frame_of(control_flow_cells(with_target=False)), "latency").set_index("strategy")
    assert set(ratios["ref_kind"]) == {CHEAPEST}
    assert ratios.at["custom_op", "ratio"] == pytest.approx(1.0)


def test_the_reference_in_onnxruntime_comes_before_the_reference_target() -> None:
    cells = [rec("custom", p, ort=0.004) for p in COMBOS]
    for cell in cells:
        cell["latency"]["reference"] = dict(cell["latency"]["ort"], median_s=0.001)
    ratios = with_ratios(frame_of(cells + [rec("native", p, ort=0.002) for p in COMBOS]), "latency")
    custom = ratios[ratios["strategy"] == "custom"]
    assert set(custom["ref_kind"]) == {REFERENCE_ORT} and list(custom["ratio"]) == pytest.approx([2.0, 2.0])
    alone = with_ratios(frame_of(cells), "latency")
    assert set(alone["ref_label"]) == {"native eager"} and list(alone["ratio"]) == pytest.approx([4.0, 4.0])


def _model(strategy: str, affine: str, verdict: str, reason: str = "") -> Dict[str, Any]:
    record = rec(strategy, {"affine_grid": affine}, verdict)
    record.update(case="stn", operators={"grid_sample": strategy, "affine_grid": affine}, reason=reason or None)
    return record


def test_the_advisor_names_what_a_strategy_needs_of_the_models_other_operators() -> None:
    message = "export: UnsupportedOperatorError: Exporting the operator ::affine_grid_generator to ONNX. More"
    records = [
        _model("mmcv", "native", "export_failed", message),
        _model("mmcv", "custom", "pass"),
        _model("native", "native", "export_failed", message),
        _model("native", "custom", "export_failed", "export: grid_sampler is not supported"),
    ]
    (advice,) = advise(frame_of(records))
    assert advice.needs == (
        "stn: mmcv grid_sample (torchscript) needs the custom affine_grid at opset 11 (the native affine_grid: "
        "export_failed, export: UnsupportedOperatorError: Exporting the operator ::affine_grid_generator to ONNX)",
        "stn: native grid_sample (torchscript) fails whatever the other operators use (the native affine_grid: "
        "export_failed, export: UnsupportedOperatorError: Exporting the operator ::affine_grid_generator to ONNX)",
    )
    assert advise(frame_of([rec("custom", COMBOS[0])]))[0].needs == ()  # one-operator cases have nothing to say
