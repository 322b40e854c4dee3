"""fp16 and int8 conversions of a stored graph: made once with the converter's version, judged by the replay at the
precision's tolerance against fp32 eager PyTorch; a quantization broken on purpose comes out a mismatch."""

from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import onnx
import onnxruntime
import pytest
import torch
from conftest import keep_graph, unit_case
from onnx import numpy_helper

from harness.artifacts.command import convert_command
from harness.artifacts.convert import TYPED, InvalidGraph, NotApplicable, check, convert
from harness.artifacts.outcome import convert_job
from harness.artifacts.store import ArtifactStore, graph_digest
from harness.campaign.options import Options
from harness.cli import build_parser
from harness.judge.parity import PRECISION_TOLERANCES
from harness.plan.spec import CellSpec
from harness.record import Verdict, read_results
from harness.record.precisions import precision_of
from harness.replay.judge import replay_graph
from harness.replay.runtimes import OnnxRuntime

OPTS = Options(threads=1, latency_budget_s=0.002)


class Small(torch.nn.Module):
    """A conv net small enough for a unit test, with weights for the quantizers to quantize."""

    def __init__(self, op):
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Conv2d(8, 2, 1)
        with torch.no_grad():
            for conv in (self.conv, self.head):
                conv.weight.copy_(torch.randn(conv.weight.shape, generator=gen) * 0.3)
                conv.bias.copy_(torch.randn(conv.bias.shape, generator=gen) * 0.1)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)))


@pytest.fixture
def stored(tmp_path):
    case = unit_case(
        model=lambda params, op: Small(op),
        inputs=lambda params, shape, gen: (torch.rand(2, 3, 8, 8, generator=gen),),
        input_names=("image",),
    )
    cell = CellSpec("unitenv", "layernorm", "unit", "{}", "native", 13, "torchscript", "static", "cpu", "float32")
    assert keep_graph(tmp_path, case, cell).verdict is Verdict.PASS
    store = ArtifactStore(tmp_path)
    return store, store.read(next(store.manifests()))


CONVERTER_NAMES = {
    "fp16": f"onnxruntime {onnxruntime.__version__} float16",
    "fp16-onnxconverter": "onnxconverter-common 1.",
    "int8-dynamic": f"onnxruntime {onnxruntime.__version__} quantization",
    "int8-static": f"onnxruntime {onnxruntime.__version__} quantization",
    "int8-static-weighted": f"onnxruntime {onnxruntime.__version__} quantization",
}


@pytest.mark.parametrize("precision", sorted(CONVERTER_NAMES))
def test_a_conversion_is_stored_beside_its_graph_and_passes_at_its_tolerance(stored, precision):
    store, fp32 = stored
    converted = convert(fp32, store, precision)
    assert store.has("unitenv", fp32.cell_id, precision) and converted.source == fp32.digest
    assert converted.converter.startswith(CONVERTER_NAMES[precision])
    fraction, rtol = PRECISION_TOLERANCES[precision_of(precision).tolerance]
    span = float(np.ptp(store.array(fp32.samples[0].outputs[0])))
    assert converted.atol == pytest.approx(max(fraction * span, fp32.atol)) and converted.rtol == rtol
    record = replay_graph(converted, store, OnnxRuntime("ortnow"), OPTS)
    assert record.verdict is Verdict.PASS, record.reason
    assert (record.precision, record.converter) == (precision, converted.converter)
    assert record.parity.max_abs > 0 and record.parity.psnr > 20  # it changed the numbers, within reason
    assert record.export.bytes == store.graph_path(converted).stat().st_size


def test_a_quantization_with_a_scale_forced_wrong_is_a_mismatch_with_the_figures(stored):
    store, fp32 = stored
    good = convert(fp32, store, "int8-static")
    assert replay_graph(good, store, OnnxRuntime("ortnow"), OPTS).verdict is Verdict.PASS
    model = onnx.load(str(store.graph_path(good)))
    quantized = {n.output[0] for n in model.graph.node if n.op_type == "QuantizeLinear"}
    dequantize = next(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in quantized)
    scale = next(t for t in model.graph.initializer if t.name == dequantize.input[1])
    forced = numpy_helper.from_array(numpy_helper.to_array(scale) * 10, scale.name + "_forced_wrong")
    model.graph.initializer.append(forced)  # an activation dequantized with ten times its calibrated scale
    dequantize.input[1] = forced.name
    blob = model.SerializeToString()
    broken = replace(good, graph=graph_digest(blob))
    store.write(broken, blob)
    record = replay_graph(broken, store, OnnxRuntime("ortnow"), OPTS)
    assert record.verdict is Verdict.MISMATCH and "max abs difference" in record.reason
    assert record.parity.max_abs > good.atol


def test_an_integer_only_graph_has_no_precision_to_convert(stored):
    store, fp32 = stored
    ints = store.put_array(np.arange(6, dtype=np.int64))
    sample = replace(fp32.samples[0], inputs=(ints,), outputs=(ints,))
    with pytest.raises(NotApplicable, match="integer-only"):
        convert(replace(fp32, samples=(sample,)), store, "fp16")


def test_dynamic_quantization_of_a_graph_without_weights_is_not_applicable(tmp_path):
    cell = CellSpec("unitenv", "layernorm", "unit", "{}", "decomposed", 13, "torchscript", "static", "cpu", "float32")
    keep_graph(tmp_path, unit_case(), cell)  # a LayerNorm written out: no MatMul, Conv or Gemm
    store = ArtifactStore(tmp_path)
    with pytest.raises(NotApplicable, match="no weighted operator"):
        convert(store.read(next(store.manifests())), store, "int8-dynamic")


def _args(tmp_path, *flags):
    where = ["--artifacts", str(tmp_path), "--results-dir", str(tmp_path / "r"), "--tag", "", "--quiet"]
    return build_parser().parse_args(["convert", *where, *flags])


THREE = ("--precision", "fp16,int8-dynamic,int8-static")


def test_the_command_records_every_conversion_and_resumes(stored, tmp_path, capsys):
    store, fp32 = stored
    assert convert_command(_args(tmp_path, *THREE)) == 0
    assert "convert: 3 conversions, 3 pass" in capsys.readouterr().err
    records = read_results(tmp_path / "r" / "convert.jsonl").records
    assert sorted(r.precision for r in records) == ["fp16", "int8-dynamic", "int8-static"]
    assert all(r.kind == "conversion" and r.verdict is Verdict.PASS and r.artifact == fp32.digest for r in records)
    assert all(r.converter and r.runtime_fingerprint.onnxruntime and r.stages[0].name == "convert" for r in records)
    assert all(store.has(fp32.env, fp32.cell_id, p) for p in ("fp16", "int8-dynamic", "int8-static"))
    assert convert_command(_args(tmp_path, *THREE)) == 0
    assert "(3 already done, skipped)" in capsys.readouterr().err
    shutil.rmtree(store.folder(fp32.env, fp32.cell_id, "fp16"))  # a converted graph lost: made again
    assert convert_command(_args(tmp_path, "--precision", "fp16")) == 0
    assert "1 conversions, 1 pass" in capsys.readouterr().err and store.has(fp32.env, fp32.cell_id, "fp16")


def test_the_command_records_what_failed_with_the_converters_message_and_resumes(stored, tmp_path, capsys):
    store, fp32 = stored
    store.graph_path(fp32).write_bytes(b"not an onnx graph")  # each converter's own parser refuses it
    assert convert_command(_args(tmp_path, *THREE)) == 0
    assert "convert: 3 conversions, 0 pass; others: export_failed 3" in capsys.readouterr().err
    failed = read_results(tmp_path / "r" / "convert.jsonl").records
    assert len(failed) == 3 and all(r.verdict is Verdict.EXPORT_FAILED and r.kind == "conversion" for r in failed)
    fp16 = next(r for r in failed if r.precision == "fp16")
    assert fp16.converter.startswith("onnxruntime ") and fp16.reason.startswith("convert: ")
    assert fp16.stages[0].name == "convert" and fp16.stages[0].outcome == "failed" and fp16.stages[0].message
    assert convert_command(_args(tmp_path, *THREE)) == 0
    assert "(3 already done, skipped)" in capsys.readouterr().err


class OwnCast(torch.nn.Module):
    """A model with a Cast(to=FLOAT) of its own (a mask made float): what onnxconverter-common 1.15 and 1.16
    retag as float16 while leaving `to=1`, so that the graph it writes is not valid ONNX."""

    def __init__(self):
        super().__init__()
        self.conv = Small(None)

    def forward(self, x):
        return self.conv(x) * (x[:, :2] > 0.5).float()


def _stored_model(tmp_path, model, cell_case="unit"):
    case = unit_case(
        model=lambda params, op: model,
        inputs=lambda params, shape, gen: (torch.rand(2, 3, 8, 8, generator=gen),),
        input_names=("image",),
    )
    cell = CellSpec("unitenv", "layernorm", cell_case, "{}", "native", 13, "torchscript", "static", "cpu", "float32")
    assert keep_graph(tmp_path, case, cell).verdict is Verdict.PASS
    store = ArtifactStore(tmp_path)
    return store, store.read(next(store.manifests()))


def test_a_converter_that_writes_invalid_onnx_is_recorded_as_the_converters_failure(tmp_path):
    store, fp32 = _stored_model(tmp_path, OwnCast())
    record = convert_job(store, fp32, "fp16-onnxconverter")
    assert record.verdict is Verdict.CHECK_FAILED and record.kind == "conversion"
    assert record.reason.startswith("check: onnxconverter-common 1.") and "wrote invalid ONNX" in record.reason
    assert "elem type" in record.reason  # onnx.checker's own words
    assert record.stages[0].name == "check" and record.converter.startswith("onnxconverter-common")
    assert not store.has(fp32.env, fp32.cell_id, "fp16-onnxconverter")  # no runtime ever judges that graph
    made = convert_job(store, fp32, "fp16")  # onnxruntime's converter rewrites the cast
    assert made.verdict is Verdict.PASS and store.has(fp32.env, fp32.cell_id, "fp16")
    replayed = replay_graph(
        store.read(store.folder(fp32.env, fp32.cell_id, "fp16") / "manifest.json"), store, OnnxRuntime("ortnow"), OPTS
    )
    assert replayed.verdict is Verdict.PASS, replayed.reason


class Planted(torch.nn.Module):
    """Three convolutions; the middle one reads a tensor with one huge channel that its own weights ignore: a
    per-tensor int8 scale of that input crushes every other channel, so only keeping it float passes."""

    def __init__(self):
        super().__init__()
        gen = torch.Generator().manual_seed(1)
        self.first = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.sensitive = torch.nn.Conv2d(8, 8, 1)
        self.last = torch.nn.Conv2d(8, 2, 1)
        with torch.no_grad():
            for conv in (self.first, self.sensitive, self.last):
                conv.weight.copy_(torch.randn(conv.weight.shape, generator=gen) * 0.3)
                conv.bias.zero_()
            self.sensitive.weight[:, 0] = 0.0
        self.register_buffer("outlier", torch.tensor([2000.0] + [0.0] * 7).reshape(1, 8, 1, 1))

    def forward(self, x):
        return self.last(torch.relu(self.sensitive(torch.relu(self.first(x)) + self.outlier)))


def test_the_search_finds_a_planted_sensitive_node(tmp_path):
    store, fp32 = _stored_model(tmp_path, Planted())
    plain = replay_graph(convert(fp32, store, "int8-static-weighted"), store, OnnxRuntime("ortnow"), OPTS)
    assert plain.verdict is Verdict.MISMATCH  # the usual recipe misses
    record = convert_job(store, fp32, "int8-static-recipe")
    assert record.kind == "search" and record.verdict is Verdict.PASS, record.reason
    kept = record.recipe["kept_float"]
    assert len(kept) == 1 and kept[0][1] == "Conv" and "sensitive" in kept[0][0]
    assert record.recipe["conversions"] <= record.recipe["budget"] and record.recipe["found"]
    searched = store.read(store.folder(fp32.env, fp32.cell_id, "int8-static-recipe") / "manifest.json")
    assert searched.record["recipe"]["kept_float"] == kept
    replayed = replay_graph(searched, store, OnnxRuntime("ortnow"), OPTS)
    assert replayed.verdict is Verdict.PASS and replayed.recipe["kept_float"] == kept  # the ladder judges it too


def test_a_search_that_finds_nothing_within_its_budget_says_so_with_the_best_it_reached(tmp_path):
    store, fp32 = _stored_model(tmp_path, Planted())
    record = convert_job(store, fp32, "int8-static-recipe", budget=1)  # only the starting recipe
    assert record.kind == "search" and record.verdict is Verdict.MISMATCH
    assert record.reason.startswith("search: no recipe within 1 conversions")
    assert record.recipe["conversions"] == 1 and not record.recipe["found"] and record.recipe["min_passing_atol"] > 0
    assert not store.has(fp32.env, fp32.cell_id, "int8-static-recipe")


def _with_a_float_range(store, fp32):
    """The stored graph plus, times zero, a Range over float bounds read from the input's width and onnxruntime's
    contrib GridSample, as a contrib-strategy STN has them: onnxruntime's symbolic shape inference stops at the
    contrib op, and its float16 converter, left without types, makes the Range float16, which ONNX's Range does
    not take."""
    model = onnx.load(str(store.graph_path(fp32)))
    model.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
    graph = model.graph
    out = graph.output[0].name
    graph.output[0].name = out + "_before"
    for node in graph.node:
        node.output[:] = [out + "_before" if o == out else o for o in node.output]

    def constant(name, value):
        return onnx.helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name), name=name)

    graph.node.extend(
        [
            constant("axis3", np.array(3, np.int64)),
            constant("start", np.array(0.0, np.float32)),
            constant("step", np.array(1.0, np.float32)),
            constant("zero", np.array(0.0, np.float32)),
            onnx.helper.make_node("Shape", [graph.input[0].name], ["shape"], name="shape_of_input"),
            onnx.helper.make_node("Gather", ["shape", "axis3"], ["width"], axis=0, name="width_of_input"),
            onnx.helper.make_node("Cast", ["width"], ["limit"], to=onnx.TensorProto.FLOAT, name="width_float"),
            onnx.helper.make_node("Range", ["start", "limit", "step"], ["ramp"], name="float_ramp"),
            onnx.helper.make_node("ReduceSum", ["ramp"], ["ramp_sum"], keepdims=0, name="ramp_sum"),
            constant("grid", np.zeros((2, 8, 8, 2), np.float32)),
            onnx.helper.make_node("GridSample", [graph.input[0].name, "grid"], ["sampled"], domain="com.microsoft"),
            onnx.helper.make_node("ReduceSum", ["sampled"], ["sampled_sum"], keepdims=0, name="sampled_sum"),
            onnx.helper.make_node("Add", ["ramp_sum", "sampled_sum"], ["both"], name="both"),
            onnx.helper.make_node("Mul", ["both", "zero"], ["nothing"], name="times_zero"),
            onnx.helper.make_node("Add", [out + "_before", "nothing"], [out], name="plus_nothing"),
        ]
    )
    graph.output[0].name = out
    blob = model.SerializeToString()
    changed = replace(fp32, graph=graph_digest(blob))
    store.write(changed, blob)
    return changed


def test_the_search_repairs_a_conversion_the_converter_wrote_invalid_onnx_for(tmp_path):
    store, fp32 = _stored_model(tmp_path, Small(None))
    ramp = _with_a_float_range(store, fp32)
    plain = convert_job(store, ramp, "fp16")
    assert plain.verdict is Verdict.CHECK_FAILED and "float_ramp" in plain.reason  # onnx.checker names the node
    record = convert_job(store, ramp, "fp16-recipe")
    assert record.kind == "search" and record.verdict is Verdict.PASS, record.reason
    # typed by ONNX's shape inference, onnxruntime's converter writes a valid graph: that setting is the recipe
    assert record.recipe["options"] == {"symbolic": False} and record.recipe["conversions"] == 2
    searched = store.read(store.folder(ramp.env, ramp.cell_id, "fp16-recipe") / "manifest.json")
    assert replay_graph(searched, store, OnnxRuntime("ortnow"), OPTS).verdict is Verdict.PASS


def test_a_converter_that_gives_up_leaves_the_working_directory_as_it_was(tmp_path, monkeypatch):
    """onnxruntime's symbolic shape inference stops at the contrib op and saves what it reached into the working
    directory (sym_shape_infer_temp.onnx and a uuid-named .data file): the converter runs in a folder of its own."""
    store, fp32 = _stored_model(tmp_path / "store", Small(None))
    ramp = _with_a_float_range(store, fp32)
    work = tmp_path / "checkout"
    work.mkdir()
    monkeypatch.chdir(work)
    assert convert_job(store, ramp, "fp16").verdict is Verdict.CHECK_FAILED
    assert convert_job(store, ramp, "fp16-recipe").verdict is Verdict.PASS
    assert sorted(p.name for p in work.iterdir()) == []


def test_a_graph_onnxruntime_cannot_type_is_the_converters_failure_where_only_the_plain_check_runs():
    """A QuantizeLinear whose output_dtype contradicts its zero point, as onnxruntime's quantizer writes at opset 21+:
    the plain check (what runs where the fp32 graph itself fails the full one) passes it, onnxruntime cannot type
    it."""
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4])
    nodes = [
        onnx.helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], output_dtype=onnx.TensorProto.INT8),
        onnx.helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"]),
    ]
    weights = [
        numpy_helper.from_array(np.array(0.1, np.float32), "s"),
        numpy_helper.from_array(np.array(0, np.uint8), "z"),
    ]
    graph = onnx.helper.make_graph(nodes, "quantized", [x], [y], weights)
    blob = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 21)], ir_version=10)
    with pytest.raises(
        InvalidGraph, match=r"the quantizer wrote a graph onnxruntime 1\.\d+\.\d+ cannot type: .*output_dtype"
    ):
        check(blob.SerializeToString(), "the quantizer", TYPED)


def test_a_search_judges_the_conversion_already_made_before_converting_again(stored, monkeypatch):
    """Every graph's fp16 search starts from its plain conversion, stored by the conversions: judged, not remade."""
    from harness.artifacts.convert import CONVERTERS

    store, fp32 = stored
    assert convert_job(store, fp32, "fp16").verdict is Verdict.PASS

    def converted_again(*args, **kwargs):
        raise AssertionError("the starting conversion was made again")

    monkeypatch.setitem(CONVERTERS, "fp16", converted_again)
    record = convert_job(store, fp32, "fp16-recipe")
    assert record.kind == "search" and record.verdict is Verdict.PASS, record.reason
    assert record.recipe["conversions"] == 1 and record.recipe["kept_float"] == []
