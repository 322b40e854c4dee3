"""`harness diverge`: a stored graph with a wrong node planted in it (a constant changed deep inside) is judged against
the intact graph's trusted run, and the record names that node; converted graphs match tensors through the
converter's renaming; the campaign traces, locates, resumes and writes its records under its own kinds."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import onnx
import pytest
from conftest import keep_graph, unit_case
from onnx import numpy_helper

from harness.artifacts.store import ArtifactStore
from harness.campaign.options import Options
from harness.diverge.compare import counterparts, first_divergence, tensor_diff
from harness.diverge.locate import locate_job, trace_job
from harness.judge.wire import Node, exposed, graph_outputs, nodes
from harness.plan.spec import CellSpec
from harness.record import RecordKind, Verdict, read_results
from harness.replay.judge import replay_graph
from harness.replay.runtimes import ADAPTERS, adapter_for

OPTS = Options(threads=1, latency=False, memory=False)
RUNTIME_KINDS = [
    pytest.param(k, marks=pytest.mark.skipif(not importlib.util.find_spec(k), reason=f"{k} has no wheel here"))
    for k in sorted(ADAPTERS)
]


@pytest.fixture
def stored(tmp_path):
    cell = CellSpec("unitenv", "layernorm", "unit", "{}", "decomposed", 13, "torchscript", "static", "cpu", "float32")
    record = keep_graph(tmp_path / "artifacts", unit_case(), cell)
    assert record.verdict is Verdict.PASS, record.reason
    store = ArtifactStore(tmp_path / "artifacts")
    return store, store.read(next(store.manifests()))


def _plant(graph: bytes):
    """The graph with one float constant deep inside (past its first third) changed, and the node that now parts:
    the Constant itself, or the first node reading a changed initializer."""
    model = onnx.load_from_string(graph)
    deep = model.graph.node[len(model.graph.node) // 3 :]
    for node in deep:
        if node.op_type == "Constant" and node.attribute[0].t.data_type == onnx.TensorProto.FLOAT:
            value = numpy_helper.to_array(node.attribute[0].t)
            node.attribute[0].t.CopyFrom(numpy_helper.from_array((value + 1.0) * 3.0, node.attribute[0].t.name))
            return model.SerializeToString(), node.name
    inits = {i.name: i for i in model.graph.initializer if i.data_type == onnx.TensorProto.FLOAT}
    for node in deep:
        changed = next((i for i in node.input if i in inits), None)
        if changed:
            value = numpy_helper.to_array(inits[changed])
            inits[changed].CopyFrom(numpy_helper.from_array((value + 1.0) * 3.0, changed))
            return model.SerializeToString(), node.name
    raise AssertionError("the graph holds no float constant to change")


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
def test_a_planted_wrong_node_is_the_first_diverging_node(stored, kind):
    store, manifest = stored
    trusted = adapter_for("onnxruntime", "ort-trusted")
    assert trace_job(store, manifest, ("parity",), trusted).verdict is Verdict.PASS
    path = store.graph_path(manifest)
    planted, wrong = _plant(path.read_bytes())
    path.write_bytes(planted)
    judge = adapter_for(kind, f"{kind}-test")
    mismatch = replay_graph(manifest, store, judge, OPTS)
    assert mismatch.verdict is Verdict.MISMATCH, mismatch.reason
    record = locate_job(store, mismatch, (trusted.name, str(trusted.version)), "fp32", ("parity",), judge)
    assert record.kind == RecordKind.DIVERGENCE.value and record.verdict is Verdict.PASS, record.reason
    found = record.divergence
    order = nodes(planted)
    assert found.node == wrong
    assert found.preceding == [n.name for n in order].index(wrong) > 0
    assert found.op_type == next(n.op_type for n in order if n.name == wrong)
    assert found.differing > 0 and found.max_abs > found.tolerance
    assert found.trusted == f"onnxruntime {trusted.version}" and found.sample == "export shape"


def test_the_intact_graph_has_no_diverging_node(stored):
    store, manifest = stored
    from harness.diverge.trace import run_exposed

    adapter = adapter_for("onnxruntime", "ort-test")
    graph = store.graph_path(manifest).read_bytes()
    inputs = store.arrays(manifest.samples[0].inputs)
    one, other = (run_exposed(adapter, graph, inputs, manifest).tensors for _ in range(2))
    found = first_divergence(nodes(graph), one, other, manifest.atol, manifest.rtol, 1.0)
    assert found.node is None and found.compared == len(nodes(graph)) > 3


def test_every_node_output_becomes_a_graph_output_once(stored):
    store, manifest = stored
    graph = store.graph_path(manifest).read_bytes()
    model, added = exposed(graph)
    parsed = onnx.load_from_string(model)  # an added output without value_info has its name alone: runtimes take it
    names = [o.name for o in parsed.graph.output]
    assert names[: len(graph_outputs(graph))] == graph_outputs(graph)
    assert len(names) == len(set(names)) and set(names) == {o for n in parsed.graph.node for o in n.output if o}
    assert [n.name for n in nodes(model)] == [n.name for n in parsed.graph.node]
    assert exposed(graph, only=[]) == (graph, [])  # nothing asked: the very bytes


def test_a_converted_graph_is_matched_through_its_casts_and_qdq_pairs():
    fp32 = {"a": np.ones(3), "b": np.ones(3)}
    converted = [
        Node(0, "Mul_0", "Mul", "", ("x",), ("a",)),
        Node(1, "a_q", "QuantizeLinear", "", ("a", "s", "z"), ("a_QuantizeLinear_Output",)),
        Node(2, "a_dq", "DequantizeLinear", "", ("a_QuantizeLinear_Output", "s", "z"), ("a_DequantizeLinear_Output",)),
        Node(3, "Add_1", "Add", "", ("a_DequantizeLinear_Output",), ("b_fp16",)),
        Node(4, "b_cast", "Cast", "", ("b_fp16",), ("b",)),
    ]
    pairs = counterparts(converted, fp32)
    assert pairs == {"a": "a", "a_DequantizeLinear_Output": "a", "b": "b"}
    got = {"a": np.ones(3), "a_DequantizeLinear_Output": np.array([1.0, 1.3, 1.0]), "b": np.ones(3)}
    found = first_divergence(converted, got, fp32, 0.05, 0.0, 1.0)
    assert found.node.name == "a_dq" and found.trusted_tensor == "a" and found.diff.differing == 1


def test_integers_must_agree_and_floats_within_the_scaled_tolerance():
    assert tensor_diff(np.array([1, 2, 3]), np.array([1, 2, 4]), 1.0, 1.0, 1.0).differing == 1
    # 1% of a range of 10 at the outputs is 1% of this tensor's magnitude (100): 1.0
    assert tensor_diff(np.array([100.9]), np.array([100.0]), 0.1, 0.0, 10.0).parts is False
    assert tensor_diff(np.array([101.1]), np.array([100.0]), 0.1, 0.0, 10.0).parts is True
    assert tensor_diff(np.array([np.nan]), np.array([np.nan]), 0.0, 0.0, 1.0).parts is False
    assert tensor_diff(np.zeros((2, 3)), np.zeros((3, 2)), 1.0, 1.0, 1.0).note == "shape [2, 3], trusted [3, 2]"
    assert tensor_diff(np.float32(2.0), np.array([2.0]), 0.0, 0.0, 1.0).parts is False  # a scalar, [] or [1]
    end = np.array([2**63 - 1])  # a Slice's "to the end", as OpenVINO narrows it to int32
    assert tensor_diff(np.array([2**31 - 1]), end, 0.0, 0.0, 1.0).parts is False


@pytest.mark.skipif(not importlib.util.find_spec("openvino"), reason="openvino has no wheel here")
def test_the_campaign_traces_locates_and_resumes(stored, tmp_path, harness_cli):
    store, manifest = stored
    results = tmp_path / "results"
    results.mkdir()
    path = store.graph_path(manifest)
    intact = path.read_bytes()
    passed = replay_graph(manifest, store, adapter_for("onnxruntime", "ort-test"), OPTS)
    planted, wrong = _plant(intact)
    path.write_bytes(planted)
    failed = replay_graph(manifest, store, adapter_for("openvino", "ov-test"), OPTS)
    assert (passed.verdict, failed.verdict) == (Verdict.PASS, Verdict.MISMATCH)
    for name, record in (("replay-ort-test", passed), ("replay-ov-test", failed)):
        (results / f"{name}.jsonl").write_text(json.dumps(record.to_json()) + "\n")
    common = ["--results-dir", str(results), "--artifacts", str(store.root), "--quiet"]
    path.write_bytes(intact)
    trace = harness_cli(
        "diverge", "--phase", "trace", "--runtime", "ort-test", "--runtime-kind", "onnxruntime", *common
    )
    assert trace.returncode == 0, trace.stderr
    path.write_bytes(planted)
    locate = ["diverge", "--runtime", "ov-test", "--runtime-kind", "openvino", *common]
    first = harness_cli(*locate)
    assert first.returncode == 0, first.stderr
    (record,) = read_results(results / "diverge-ov-test.jsonl").records
    assert record.kind == "divergence" and record.divergence.node == wrong, record.reason
    assert read_results(results / "trace-ort-test.jsonl").records[0].kind == "trace"
    again = harness_cli(*locate)
    assert again.returncode == 0 and "1 already done, skipped" in again.stderr, again.stderr
    budget = harness_cli(*locate, "--budget", "0", "--rerun")
    assert "1 mismatches left out by --budget 0" in budget.stderr, budget.stderr


def test_the_mismatches_are_read_once_for_every_diverge_process_while_the_results_stay(tmp_path, monkeypatch):
    from harness.diverge import jobs
    from harness.record import CellRecord, Runtime, Verdict

    def judged(verdict, runtime, env):
        return CellRecord(
            "torch2", "grid_sample", "stn", {}, "custom", 16, "torchscript", "static", "cpu", "float32", verdict, "now",
            kind="replay", cell_id="abc", runtime=Runtime(*runtime, env=env),
        )  # fmt: skip

    replay = tmp_path / "replay-ov.jsonl"
    lines = [
        judged(Verdict.MISMATCH, ("openvino", "2026.4.1"), "ov"),
        judged(Verdict.PASS, ("onnxruntime", "1.32.0"), "ort"),
    ]
    replay.write_text("".join(r.to_line() + "\n" for r in lines))
    first = jobs.planned(str(tmp_path), 300)
    assert [m.trusted for m in first[0]] == [("onnxruntime", "1.32.0")] and (tmp_path / jobs.PLAN).is_file()

    def read_again(folder):
        raise AssertionError("the results were read again")

    monkeypatch.setattr(jobs, "judged_records", read_again)
    assert jobs.planned(str(tmp_path), 300) == first  # the plan, not the results
    with pytest.raises(AssertionError, match="read again"):
        jobs.planned(str(tmp_path), 200)  # another budget: another plan
    replay.write_text(replay.read_text() + lines[0].to_line() + "\n")
    with pytest.raises(AssertionError, match="read again"):
        jobs.planned(str(tmp_path), 300)  # a results file changed
