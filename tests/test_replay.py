"""`harness replay`: stored graphs judged again by a runtime, as their exporting cell judged them, through the same
stages, comparison and timer; crash-safe workers, resume and shards as `harness run` has them."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace

import numpy as np
import onnx
import onnxruntime
import pytest
import torch
from conftest import keep_graph, unit_case

from harness.artifacts.store import ArtifactStore
from harness.campaign.options import NOT_COSTED, Options
from harness.errors import UserError
from harness.judge.measure import FOOTPRINT_METHOD, WORKING_SET_METHOD
from harness.plan.spec import CellSpec
from harness.record import Verdict, read_results
from harness.replay.judge import REPLAY_STAGES, replay_graph
from harness.replay.runtimes import ADAPTERS, OnnxRuntime, adapter_for

OPTS = Options(threads=1, latency_budget_s=0.002)


def _cell(opset=13, shape_mode="static"):
    return CellSpec(
        "unitenv", "layernorm", "unit", "{}", "decomposed", opset, "torchscript", shape_mode, "cpu", "float32"
    )


@pytest.fixture
def stored(tmp_path):
    """One real exported graph in an artifacts folder, and its exporting record."""
    record = keep_graph(tmp_path / "artifacts", unit_case(), _cell())
    store = ArtifactStore(tmp_path / "artifacts")
    return store, store.read(next(store.manifests())), record


def test_a_stored_graph_replayed_in_onnxruntime_is_judged_as_its_exporting_cell_was(stored):
    store, manifest, exported = stored
    record = replay_graph(manifest, store, OnnxRuntime("ortnow"), OPTS)
    assert record.verdict is Verdict.PASS, record.reason
    assert [s.name for s in record.stages] == [spec.name for spec in REPLAY_STAGES]
    assert record.parity.max_abs == pytest.approx(exported.parity.max_abs, abs=1e-6)
    assert (record.runtime.name, record.runtime.version, record.runtime.env) == (
        "onnxruntime",
        onnxruntime.__version__,
        "ortnow",
    )
    assert record.key()[1:10] == exported.key()[1:10]  # the same cell; its runtime part names who judged it
    assert record.artifact == exported.artifact == manifest.digest
    assert (record.case, record.opset, record.actual_opset) == (exported.case, exported.opset, exported.actual_opset)
    assert set(record.latency) == {"ort"} and record.latency["ort"].median_s > 0
    assert record.memory["ort"].method == FOOTPRINT_METHOD and record.eager_parity is None
    assert record.memory["ort.working_set"].method == WORKING_SET_METHOD  # a second session, its arena off
    assert record.memory["ort"].peak_bytes > 0 and record.memory["ort.working_set"].peak_bytes >= 0


def test_outputs_beyond_the_stored_tolerance_are_a_mismatch_with_the_figures(stored):
    store, manifest, _ = stored
    sample, *calibration = manifest.samples
    shifted = store.put_array(store.array(sample.outputs[0]) + np.float32(0.5))
    tampered = replace(manifest, samples=(replace(sample, outputs=(shifted,)), *calibration))
    record = replay_graph(tampered, store, OnnxRuntime("ortnow"), OPTS)
    assert record.verdict is Verdict.MISMATCH
    assert "onnxruntime vs reference: max abs difference 0.5" in record.reason
    assert record.parity.max_abs == pytest.approx(0.5, abs=1e-5)


def test_a_graph_the_runtime_refuses_is_load_failed_with_the_runtimes_own_message(stored):
    store, manifest, _ = stored
    store.graph_path(manifest).write_bytes(b"not a model")
    record = replay_graph(manifest, store, OnnxRuntime("ortnow"), OPTS)
    assert record.verdict is Verdict.LOAD_FAILED and "ONNXRuntimeError" in record.reason
    load = record.stages[0]
    assert load.outcome == "failed" and "ONNXRuntimeError" in load.message
    assert [s.outcome for s in record.stages[1:]] == ["skipped"] * (len(REPLAY_STAGES) - 1)


def test_a_runtime_that_is_not_installed_or_unknown_is_one_line_naming_the_fix(monkeypatch):
    from harness.replay.runtimes import OpenVino

    monkeypatch.setattr(OpenVino, "distributions", lambda self: ("openvino-of-another-machine",))
    with pytest.raises(
        UserError, match="openvino is not installed in this Python .*nox -s \"replay\\(runtime='ov'\\)\""
    ):
        adapter_for("openvino", "ov")
    with pytest.raises(UserError, match="use one of onnxruntime, openvino"):
        adapter_for("tensorflow", "tf")


def _replay(harness_cli, tmp_path, *args):
    return harness_cli(
        "replay", "--runtime", "ortnow", "--runtime-kind", "onnxruntime", "--artifacts", str(tmp_path / "artifacts"),
        "--results-dir",
        str(tmp_path / "results"), "--latency-budget", "0.002", *args,
    )  # fmt: skip


def _as_if_exported_with(store, version):
    for path in store.manifests():
        data = json.loads(path.read_text())
        data["record"]["runtime"] = {"name": "onnxruntime", "version": version}
        path.write_text(json.dumps(data))


def test_the_exporting_runtime_is_not_asked_twice(stored, tmp_path, harness_cli):
    proc = _replay(harness_cli, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"1 graphs left out: their exporting environment's own onnxruntime {onnxruntime.__version__}" in proc.stderr


def test_replay_runs_in_workers_resumes_and_shards(stored, tmp_path, harness_cli):
    store, _, _ = stored
    keep_graph(tmp_path / "artifacts", unit_case(), _cell(opset=11))
    keep_graph(tmp_path / "artifacts", unit_case(), _cell(opset=12))
    _as_if_exported_with(store, "1.10.0")  # as though another environment's onnxruntime had judged them
    first = _replay(harness_cli, tmp_path)
    assert first.returncode == 0, first.stderr
    assert "3 stored graphs, 0 already in" in first.stderr and "3 to judge" in first.stderr
    found = read_results(tmp_path / "results" / "replay-ortnow.jsonl")
    assert [r.verdict for r in found.records] == [Verdict.PASS] * 3
    assert {r.runtime.env for r in found.records} == {"ortnow"} and all(r.run_id and r.code_hash for r in found.records)
    again = _replay(harness_cli, tmp_path)
    assert "3 already in" in again.stderr and "0 to judge" in again.stderr
    halves = [
        _replay(harness_cli, tmp_path, "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}.jsonl")) for i in (1, 2)
    ]
    assert all(p.returncode == 0 for p in halves), [p.stderr for p in halves]
    ids = [r.cell_id for i in (1, 2) for r in read_results(tmp_path / f"s{i}.jsonl").records]
    assert sorted(ids) == sorted(r.cell_id for r in found.records)


def test_no_stored_graph_is_one_line_naming_what_keeps_them(tmp_path, harness_cli):
    proc = _replay(harness_cli, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: no stored graph under {tmp_path / 'artifacts'} matches the selection; `nox -s matrix` (or "
        "`harness run`) keeps each exported graph there, or pass --artifacts DIR"
    ]


class SizeOnly(torch.nn.Module):
    """Reads only the size of its first input: the exporter drops that input from the graph."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x, theta):
        return self.op(theta, (theta.shape[-1],)) * x.shape[-1]


# The tests session installs OpenVINO wherever it has a wheel (not Linux ARM64): there its adapter is tested too.
RUNTIME_KINDS = [
    pytest.param(k, marks=pytest.mark.skipif(not importlib.util.find_spec(k), reason=f"{k} has no wheel here"))
    for k in sorted(ADAPTERS)
]


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
def test_a_graph_whose_exporter_dropped_an_input_is_fed_by_name_on_every_runtime_kind(tmp_path, kind):
    inputs = lambda params, shape, gen: (torch.randn(2, 3, 4, 5, generator=gen), torch.randn(2, 6, generator=gen))  # noqa: E731
    case = unit_case(model=lambda params, op: SizeOnly(op), inputs=inputs, input_names=("x", "theta"))
    exported = keep_graph(tmp_path, case, _cell())  # fed by position, theta would get x
    assert exported.verdict is Verdict.PASS, exported.reason
    store = ArtifactStore(tmp_path)
    manifest = store.read(next(store.manifests()))
    assert [i.name for i in onnx.load(str(store.graph_path(manifest))).graph.input] == ["theta"]
    assert manifest.input_names == ("x", "theta")
    record = replay_graph(manifest, store, adapter_for(kind, f"{kind}-test"), OPTS)
    assert record.verdict is Verdict.PASS, record.reason
    assert record.parity.max_abs is not None and record.parity.max_abs <= record.parity.atol


@pytest.mark.skipif(not importlib.util.find_spec("openvino"), reason="openvino has no wheel here (Linux ARM64)")
def test_openvino_computes_an_fp32_graph_at_its_default_bf16_and_f16_and_names_what_it_chose(stored):
    store, manifest, _ = stored
    adapter = adapter_for("openvino", "ov-test")
    capabilities = [str(c) for c in adapter.core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")]
    chosen = {}
    for precision, hint, capability in (("runtime-bf16", "bf16", "BF16"), ("runtime-f16", "f16", "FP16")):
        record = replay_graph(manifest, store, adapter, OPTS, precision)
        assert record.precision == precision and record.artifact == manifest.digest  # the fp32 graph, computed so
        if capability not in capabilities:  # OpenVINO's own word on this CPU
            assert record.verdict is Verdict.NOT_APPLICABLE and capability.lower()[:2] in record.reason.lower()
            continue
        assert record.runtime_settings == {"inference_precision": hint}
        assert record.parity.atol > manifest.atol  # judged by the precision's tolerance, not fp32's
        chosen[precision] = record
    default = replay_graph(manifest, store, adapter, OPTS, "runtime-default")
    assert default.runtime_settings["inference_precision"] in ("f32", "bf16", "f16")
    assert (default.runtime_settings["inference_precision"] == "bf16") == ("BF16" in capabilities)
    fp32 = replay_graph(manifest, store, adapter, OPTS)
    assert fp32.runtime_settings == {"inference_precision": "f32"} and fp32.parity.atol == manifest.atol


@pytest.mark.skipif(not importlib.util.find_spec("openvino"), reason="openvino has no wheel here (Linux ARM64)")
def test_runtime_default_is_judged_once_with_the_precision_this_cpu_picks(stored, tmp_path, harness_cli):
    """On a CPU where OpenVINO picks bf16 by default, runtime-default and runtime-bf16 are one compilation: one of
    the two records is judged with the other and says so; where it picks f32, both are compiled."""
    for path in stored[0].manifests():  # a real model's graph, which the runtime precisions are for
        data = json.loads(path.read_text())
        data["record"]["tags"] = ["model"]
        path.write_text(json.dumps(data))
    proc = harness_cli(
        "replay", "--runtime", "ovnow", "--runtime-kind", "openvino", "--artifacts", str(tmp_path / "artifacts"),
        "--results-dir", str(tmp_path / "results"), "--latency-budget", "0.002",
        "--precision", "fp32,runtime-default,runtime-bf16,runtime-f16",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = {r.precision: r for r in read_results(tmp_path / "results" / "replay-ovnow.jsonl").records}
    assert set(records) == {"fp32", "runtime-default", "runtime-bf16", "runtime-f16"}
    chosen = adapter_for("openvino", "ovnow").default_hint()
    assert records["runtime-default"].runtime_settings.get("inference_precision") in (chosen, None)
    twins = {p for p, r in records.items() if r.judged_with}
    if chosen == "bf16" and records["runtime-bf16"].verdict is not Verdict.NOT_APPLICABLE:
        assert len(twins & {"runtime-default", "runtime-bf16"}) == 1 and twins <= {"runtime-default", "runtime-bf16"}
        assert records["runtime-default"].verdict is records["runtime-bf16"].verdict
        assert records["runtime-default"].runtime_settings == records["runtime-bf16"].runtime_settings
    else:
        assert not twins


def test_the_working_set_is_taken_right_after_the_first_run():
    """Before parity and latency run the graph again and again: their freed buffers would hold the next run's."""
    names = [s.name for s in REPLAY_STAGES]
    assert names.index("memory") == names.index("run") + 1 < names.index("latency")


def test_a_sweeps_graph_is_judged_everywhere_and_costed_only_when_asked(stored):
    store, manifest, _ = stored
    swept = replace(manifest, record=dict(manifest.record, tags=["op", "sweep"]))
    judged = replay_graph(swept, store, OnnxRuntime("ortnow"), OPTS)
    assert judged.verdict is Verdict.PASS and judged.parity is not None
    assert judged.latency == {} and judged.memory == {}
    skipped = {s.name: s for s in judged.stages if s.name in ("latency", "memory")}
    assert all(s.outcome == "skipped" and s.message == NOT_COSTED for s in skipped.values()) and len(skipped) == 2
    costed = replay_graph(swept, store, OnnxRuntime("ortnow"), replace(OPTS, cost_sweeps=True))
    assert set(costed.latency) == {"ort"} and {"ort", "ort.working_set"} <= set(costed.memory)


def test_a_runtime_leaves_out_the_graphs_of_the_tags_it_skips(stored, tmp_path, harness_cli):
    """--skip-tag (a runtime file's skip_tags): the old rungs leave the benchmark-size graphs to the newest."""
    store, _, _ = stored
    keep_graph(tmp_path / "artifacts", unit_case(), _cell(opset=11))
    _as_if_exported_with(store, "1.10.0")
    benched = sorted(store.manifests())[0]
    data = json.loads(benched.read_text())
    data["record"]["tags"] = ["bench"]
    benched.write_text(json.dumps(data))
    proc = _replay(harness_cli, tmp_path, "--skip-tag", "bench")
    assert proc.returncode == 0, proc.stderr
    judged = read_results(tmp_path / "results" / "replay-ortnow.jsonl").records
    assert [r.cell_id for r in judged] == [
        json.loads(p.read_text())["cell_id"] for p in store.manifests() if p != benched
    ]
