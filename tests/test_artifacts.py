"""The artifacts folder: arrays stored once by content, a graph's folder written whole, manifests read strictly,
and the worker keeping every exported graph with the samples it was judged on."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime
import pytest
import torch
from conftest import keep_graph, scale_model, unit_case

from harness.artifacts.store import ArtifactError, ArtifactStore, Manifest, Sample
from harness.judge import parity
from harness.plan.spec import CellSpec
from harness.record import Verdict
from harness.worker import pipeline


def _manifest(**kw):
    base = dict(
        env="e",
        cell_id="ab12",
        record={"env": "e"},
        input_names=("x",),
        atol=1e-4,
        rtol=1e-4,
        samples=(Sample("export shape", "parity", ("i",), ("o",)),),
        graph="g",
    )
    return Manifest(**dict(base, **kw))


def test_an_array_is_stored_once_by_its_content_and_reads_back_equal(tmp_path):
    store = ArtifactStore(tmp_path)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert store.put_array(a) == store.put_array(a.copy())
    assert store.put_array(a.view(np.int32)) != store.put_array(a)  # same bytes, another dtype
    assert store.put_array(a.reshape(4, 3)) != store.put_array(a)  # same bytes, another shape
    assert len(list((tmp_path / "arrays").iterdir())) == 3
    back = store.array(store.put_array(a))
    assert back.dtype == np.float32 and np.array_equal(back, a)


def test_a_graph_folder_is_written_whole_and_replaced_whole(tmp_path):
    store = ArtifactStore(tmp_path)
    store.write(_manifest(), b"first")
    store.write(_manifest(graph="g2"), b"second")
    folder = store.folder("e", "ab12")
    assert sorted(p.name for p in folder.iterdir()) == ["graph.onnx", "manifest.json"]
    assert (folder / "graph.onnx").read_bytes() == b"second" and store.read(folder / "manifest.json").graph == "g2"
    assert [p.name for p in tmp_path.joinpath("e").iterdir()] == ["ab12"]  # no temporary folder left behind
    store.discard("e", "ab12")
    assert not store.has("e", "ab12") and list(store.manifests()) == []


def test_the_digest_names_the_graph_its_samples_and_tolerance_not_the_record():
    assert _manifest().digest == _manifest(record={"env": "e", "verdict": "pass"}).digest
    assert _manifest().digest != _manifest(atol=1e-3).digest
    assert _manifest().digest != _manifest(graph="other").digest


@pytest.mark.parametrize("data", [{"schema_version": 99}, [], {"schema_version": 1, "env": "e"}])
def test_a_manifest_of_another_schema_or_malformed_is_one_line_naming_the_fix(tmp_path, data):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ArtifactError) as refused:
        ArtifactStore(tmp_path).read(path)
    assert str(refused.value).endswith("export it again") and "\n" not in str(refused.value)


def test_the_worker_keeps_the_graph_with_every_input_set_it_judged(tmp_path):
    def inputs(params, shape, gen):
        return (torch.randn(shape.get("N", 2), 5, generator=gen) * (-1 if shape.get("variant") else 1),)

    case = unit_case(
        inputs=inputs,
        shapes=({"N": 2}, {"N": 4}),
        variants=1,
        input_names=("x",),
        dynamic_axes={"x": {0: "n"}, "output": {0: "n"}},
        shape_modes=("static", "dynamic"),
    )
    cell = CellSpec("unitenv", "layernorm", "unit", "{}", "decomposed", 13, "torchscript", "dynamic", "cpu", "float32")
    record = keep_graph(tmp_path, case, cell)
    store = ArtifactStore(tmp_path)
    manifest = store.read(store.folder("unitenv", cell.cell_id) / "manifest.json")
    assert record.verdict is Verdict.PASS and record.artifact == manifest.digest
    assert [(s.label, s.stage) for s in manifest.samples] == [
        ("export shape", "parity"),
        ("input variant 1", "parity"),
        ("shape {'N': 4}", "dynamic"),
        *((f"calibration {i}", "calibration") for i in range(1, 5)),  # other seeds, for a static int8 quantization
    ]
    calibration = [store.arrays(s.inputs)[0] for s in manifest.samples if s.stage == "calibration"]
    judged = [store.arrays(s.inputs)[0] for s in manifest.samples if s.stage != "calibration"]
    assert all(c.shape == (2, 5) and not any(np.array_equal(c, j) for j in judged) for c in calibration)
    assert (manifest.atol, manifest.rtol) == (record.parity.atol, record.parity.rtol)
    assert manifest.record["actual_opset"] == 13 and manifest.record["case"] == "unit"
    session = onnxruntime.InferenceSession(str(store.graph_path(manifest)), providers=["CPUExecutionProvider"])
    for sample in manifest.samples[:3]:  # the stored graph, fed the stored inputs, gives the stored reference outputs
        (x,) = store.arrays(sample.inputs)
        got = session.run(None, {"x": x})
        assert parity.compare(got, store.arrays(sample.outputs), manifest.atol, manifest.rtol)["ok"]


def test_a_graph_no_runtime_here_can_load_is_kept_for_the_others(tmp_path, monkeypatch):
    def refuses(*args, **kwargs):
        raise RuntimeError("no kernel for this node here")

    monkeypatch.setattr(pipeline, "OrtSession", refuses)
    cell = CellSpec("unitenv", "layernorm", "unit", "{}", "decomposed", 13, "torchscript", "static", "cpu", "float32")
    record = keep_graph(tmp_path, unit_case(model=lambda params, op: scale_model(op)), cell)
    assert record.verdict is Verdict.LOAD_FAILED and record.artifact
    assert ArtifactStore(tmp_path).has("unitenv", cell.cell_id)


def test_a_graph_that_does_not_export_keeps_nothing(tmp_path, monkeypatch):
    def fails(*args, **kwargs):
        raise RuntimeError("Exporting the operator is not supported")

    monkeypatch.setattr(pipeline, "export_onnx", fails)
    cell = CellSpec("unitenv", "layernorm", "unit", "{}", "decomposed", 13, "torchscript", "static", "cpu", "float32")
    record = keep_graph(tmp_path, unit_case(), cell)
    assert record.verdict is Verdict.EXPORT_FAILED and record.artifact == ""
    assert list(ArtifactStore(tmp_path).manifests()) == []


def _run_twice_args(tmp_path):
    return (
        "run",
        "--case",
        "layernorm",
        "--strategy",
        "native,decomposed",
        "--opset",
        "13",
        "--exporter",
        "torchscript",
        "--results-dir",
        str(tmp_path / "results"),
        "--no-latency",
        "--no-memory",
    )


def test_resume_keeps_a_cell_with_its_graph_and_measures_again_one_whose_graph_was_lost(tmp_path, harness_cli):
    first = harness_cli(*_run_twice_args(tmp_path))
    assert first.returncode == 0, first.stderr
    store = ArtifactStore(tmp_path / "artifacts")  # beside the results folder by default
    graphs = list(store.manifests())
    assert graphs and f"artifacts: {len(graphs)} graphs" in first.stderr
    again = harness_cli(*_run_twice_args(tmp_path))
    assert "0 to run" in again.stderr, again.stderr
    lost = graphs[0].parent
    store.discard(lost.parent.name, lost.name)
    third = harness_cli(*_run_twice_args(tmp_path))
    assert "1 to run" in third.stderr, third.stderr
    assert store.has(lost.parent.name, lost.name)
