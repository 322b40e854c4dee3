"""Twins: two torch releases whose exporter wrote the same graph (but for its name and version) have one answer on
a runtime and from a converter. The campaign runs the first and writes the other's record from its answer, naming
the job it was judged with; a graph that differs in anything else is run on its own."""

from __future__ import annotations

import json
import shutil

import onnx
import pytest
from conftest import keep_graph, unit_case
from test_convert import Small

from harness.artifacts.command import convert_command
from harness.artifacts.store import ArtifactStore, content_digest, graph_digest
from harness.cli import build_parser
from harness.plan.spec import CellSpec
from harness.record import Verdict, read_results


@pytest.fixture
def store(tmp_path):
    case = unit_case(
        model=lambda params, op: Small(op),
        inputs=lambda params, shape, gen: (__import__("torch").rand(2, 3, 8, 8, generator=gen),),
        input_names=("image",),
    )
    cell = CellSpec("older", "layernorm", "unit", "{}", "native", 13, "torchscript", "static", "cpu", "float32")
    assert keep_graph(tmp_path / "artifacts", case, cell).verdict is Verdict.PASS
    return ArtifactStore(tmp_path / "artifacts")


def _exported_again(store, env, change):
    """The stored graph as another environment's exporter wrote it: `change` edits the model."""
    older = store.read(next(store.manifests()))
    folder = store.folder(env, older.cell_id)
    shutil.copytree(store.folder(older.env, older.cell_id), folder)
    model = onnx.load(str(folder / "graph.onnx"))
    change(model)
    blob = model.SerializeToString()
    (folder / "graph.onnx").write_bytes(blob)
    data = json.loads((folder / "manifest.json").read_text())
    data.update(env=env, graph=graph_digest(blob))
    data["record"].update(env=env, runtime={"name": "onnxruntime", "version": "1.10.0"})
    (folder / "manifest.json").write_text(json.dumps(data))
    older_path = store.folder(older.env, older.cell_id) / "manifest.json"
    first = json.loads(older_path.read_text())
    first["record"]["runtime"] = {"name": "onnxruntime", "version": "1.10.0"}  # as though another onnxruntime judged
    older_path.write_text(json.dumps(first))
    return older


def _newer_release(model):
    model.producer_version = "99.0"


def _another_weight(model):
    model.graph.initializer[0].raw_data = bytes(reversed(model.graph.initializer[0].raw_data))


def test_the_content_digest_leaves_out_the_exporters_name_and_version_and_nothing_else(store):
    older = store.read(next(store.manifests()))
    blob = store.graph_path(older).read_bytes()
    model = onnx.load_from_string(blob)
    _newer_release(model)
    model.producer_name = "another exporter"
    assert content_digest(model.SerializeToString()) == content_digest(blob)
    _another_weight(model)
    assert content_digest(model.SerializeToString()) != content_digest(blob)


def _convert(tmp_path, precision):
    where = ["--artifacts", str(tmp_path / "artifacts"), "--results-dir", str(tmp_path / "r"), "--tag", "", "--quiet"]
    return convert_command(build_parser().parse_args(["convert", *where, "--precision", precision]))


def _replay(harness_cli, tmp_path):
    return harness_cli(
        "replay", "--runtime", "ortnow", "--runtime-kind", "onnxruntime", "--artifacts", str(tmp_path / "artifacts"),
        "--results-dir", str(tmp_path / "r"), "--latency-budget", "0.002", "--quiet",
    )  # fmt: skip


def test_a_graph_another_torch_release_wrote_alike_is_judged_once_for_both(store, tmp_path, harness_cli):
    older = _exported_again(store, "newer", _newer_release)
    assert _convert(tmp_path, "int8-dynamic") == 0
    made = read_results(tmp_path / "r" / "convert.jsonl").records
    assert sorted(r.env for r in made) == ["newer", "older"]
    (ran,) = [r for r in made if not r.judged_with]
    (twin,) = [r for r in made if r.judged_with]
    assert twin.judged_with == f"{ran.env}/{older.cell_id}@int8-dynamic" and twin.wall_s == 0.0
    assert twin.verdict is ran.verdict is Verdict.PASS and twin.converter == ran.converter
    assert twin.artifact != ran.artifact  # each names its own stored graph
    converted = [
        store.read(store.folder(env, older.cell_id, "int8-dynamic") / "manifest.json") for env in ("older", "newer")
    ]
    assert converted[0].graph == converted[1].graph and converted[1].record["env"] == "newer"

    proc = _replay(harness_cli, tmp_path)
    assert proc.returncode == 0, proc.stderr
    judged = read_results(tmp_path / "r" / "replay-ortnow.jsonl").records
    assert len(judged) == 4  # two graphs, each at fp32 and int8-dynamic
    by = {(r.env, r.precision): r for r in judged}
    for precision in ("fp32", "int8-dynamic"):
        pair = [by["older", precision], by["newer", precision]]
        first, second = sorted(pair, key=lambda r: bool(r.judged_with))
        suffix = "" if precision == "fp32" else f"@{precision}"
        assert second.judged_with == f"{first.env}/{first.cell_id}{suffix}" and not first.judged_with
        assert second.verdict is first.verdict is Verdict.PASS
        assert second.latency == first.latency and second.parity == first.parity and second.memory == first.memory
        assert (second.env, second.artifact) != (first.env, first.artifact)
    again = _replay(harness_cli, tmp_path)  # resumed: a twin's record stands like any other
    assert again.returncode == 0 and len(read_results(tmp_path / "r" / "replay-ortnow.jsonl").records) == 4


def test_a_graph_that_differs_in_a_weight_is_judged_on_its_own(store, tmp_path, harness_cli):
    _exported_again(store, "newer", _another_weight)
    proc = _replay(harness_cli, tmp_path)
    assert proc.returncode == 0, proc.stderr
    judged = read_results(tmp_path / "r" / "replay-ortnow.jsonl").records
    assert sorted(r.env for r in judged) == ["newer", "older"] and not any(r.judged_with for r in judged)


def test_a_twins_mismatch_is_located_once_and_shown_for_both():
    """The divergences skip a twin's mismatch (its first's is located); the page shows the first's node for both."""
    from harness.diverge.jobs import mismatches
    from harness.record import CellRecord, Divergence, Runtime
    from harness.report.divergence import twin_divergences

    def judged(env, verdict, **more):
        return CellRecord(
            env, "grid_sample", "stn", {}, "custom", 16, "torchscript", "static", "cpu", "float32", verdict, "now",
            kind="replay", cell_id="abc", runtime=Runtime("openvino", "2026.4.1", env="ov"), **more,
        )  # fmt: skip

    first = judged("torch2", Verdict.MISMATCH)
    twin = judged("torch2.15", Verdict.MISMATCH, judged_with="torch2/abc")
    passing = [
        r.with_(verdict=Verdict.PASS, runtime=Runtime("onnxruntime", "1.32.0", env="ort")) for r in (first, twin)
    ]
    found, untrusted, over = mismatches([first, twin, *passing])
    assert [m.record.env for m in found] == ["torch2"] and (untrusted, over) == (0, 0)
    located = first.with_(kind="divergence", divergence=Divergence("onnxruntime 1.32.0", node="n7", op_type="Gather"))
    (copy,) = twin_divergences([first, twin], [located])
    assert (copy.env, copy.cell_id, copy.divergence.node, copy.kind) == ("torch2.15", "abc", "n7", "divergence")
