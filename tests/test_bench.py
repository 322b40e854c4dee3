"""bench-op: its flags and their checks, the interleaved timing, the table, and a real run on a tiny shape."""

from __future__ import annotations

import argparse
import json

import pytest

from harness.bench.cli import add_arguments, bench_run_from, write_json
from harness.bench.measure import BENCH_FORMAT_VERSION, IMPLS, BenchConfig, BenchRecord, Shape, interleaved_times
from harness.bench.table import render_table
from harness.errors import UserError

TINY = Shape("tiny", 2, 3, (6, 7), (4, 5))


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def _rec(impl, ms, note="", noisy=False, peak=10.0, diff=0.0):
    return BenchRecord("tiny", "bilinear", "zeros", impl, ms, None if ms is None else 0.1, noisy, peak, diff, note)


# Flags -------------------------------------------------------------------------------------------------


def test_flags_keep_their_defaults():
    bench = bench_run_from(_args())
    assert [s.name for s in bench.shapes] == ["ref", "fmap", "vol"]
    assert bench.modes == ("bilinear",) and bench.paddings == ("zeros",) and bench.json_path is None
    assert bench.config == BenchConfig(impls=IMPLS, threads=2, repeat=7, budget_s=1.0, rounds=3, opset=None)


def test_flags_are_read_into_the_config():
    argv = ["--shapes", "fmap, vol", "--modes", "nearest,bicubic", "--paddings", "border", "--impls", "native"]
    argv += ["--threads", "1", "--repeat", "3", "--budget", "0.5", "--rounds", "2", "--opset", "13"]
    bench = bench_run_from(_args(*argv, "--align-corners", "--json", "out.json"))
    assert [s.name for s in bench.shapes] == ["fmap", "vol"] and bench.modes == ("nearest", "bicubic")
    assert bench.config == BenchConfig(("native",), 1, 3, 0.5, 2, 13, True) and bench.json_path == "out.json"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--shapes", "huge"], "--shapes huge: unknown; use one of ref, fmap, vol"),
        (["--impls", "native,onnx"], "--impls onnx: unknown; use one of native, custom, mmcv, ort-kernel"),
        (["--modes", ","], "--modes is empty; use one or more of bilinear, nearest, bicubic"),
        (["--rounds", "0"], "--rounds 0: must be at least 1, for example --rounds 3"),
        (["--threads", "-1"], "--threads -1: must be at least 1"),
        (["--budget", "-0.5"], "--budget -0.5: must be 0 or more seconds"),
    ],
)
def test_a_bad_flag_value_is_a_user_error_naming_the_fix(argv, message):
    with pytest.raises(UserError) as err:
        bench_run_from(_args(*argv))
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_bad_flag_value_exits_2_with_one_line(harness_cli):
    proc = harness_cli("bench-op", "--rounds", "0", timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == ["error: --rounds 0: must be at least 1, for example --rounds 3"]
    assert proc.stdout == ""


# Timing ------------------------------------------------------------------------------------------------


def test_rows_are_interleaved_and_their_samples_pooled():
    """Every round times every row in turn, so a slow spell of the machine lands on all rows alike."""
    log = []
    runs = {name: (lambda name=name: log.append(name)) for name in ("a", "b", "c")}
    times = interleaved_times(runs, BenchConfig(budget_s=0, repeat=4, rounds=2), settle_s=0)
    changes = [name for k, name in enumerate(log) if k == 0 or log[k - 1] != name]
    assert changes == ["a", "b", "c", "a", "b", "c"]
    assert all(len(m.times) == 2 * 2 for m in times.values())  # repeat 4 over 2 rounds, pooled


# Table and JSON ----------------------------------------------------------------------------------------


def test_table_gives_ratios_in_the_same_runtime_and_notes():
    rows = [
        _rec("native", 2.0),
        _rec("custom", 4.0, noisy=True),
        _rec("mmcv", 8.0),
        _rec("ort-kernel", 1.0, peak=None),
        _rec("ort-custom", 3.0, note="NaN positions differ"),
        _rec("ort-mmcv", None, note="mmcv's bilinear_grid_sample does not import here"),
    ]
    table = render_table(TINY, "bilinear", "zeros", rows).splitlines()
    assert table[0] == "### N2 C3 6x7->4x5 bilinear/zeros"
    assert table[4].startswith("| impl | median ms | IQR ms | vs native | vs mmcv | vs ORT kernel |")
    by_impl = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in table[6:]}
    assert by_impl["custom"] == ["4.00", "0.10", "2.00x", "0.50x", "4.00x", "10.0", "0.00e+00", "noisy"]
    assert by_impl["ort-kernel"][2:6] == ["0.50x", "-", "1.00x", "-"]  # no ort-mmcv to compare with
    assert by_impl["ort-custom"][-1] == "NaN positions differ"
    assert by_impl["ort-mmcv"] == ["-"] * 7 + ["mmcv's bilinear_grid_sample does not import here"]


def test_json_carries_the_bench_format_version_and_every_field(tmp_path):
    path = tmp_path / "bench.json"
    write_json(str(path), {"torch": "2.13.0", "onnxruntime": "1.32.0"}, [_rec("native", 2.0)])
    data = json.loads(path.read_text())
    assert data["schema_version"] == BENCH_FORMAT_VERSION
    assert data["records"][0] == {
        "shape": "tiny",
        "mode": "bilinear",
        "padding": "zeros",
        "impl": "native",
        "median_ms": 2.0,
        "iqr_ms": 0.1,
        "noisy": False,
        "peak_mb": 10.0,
        "max_abs_diff": 0.0,
        "note": "",
        "schema_version": BENCH_FORMAT_VERSION,
    }


# A real run --------------------------------------------------------------------------------------------


def test_every_runtime_is_measured_on_a_tiny_shape():
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed here")
    from harness.bench.measure import bench_case, make_case
    from harness.worker.fingerprint import collect

    config = BenchConfig(impls=("native", "custom", "mmcv", "ort-kernel", "ort-custom"), budget_s=0.01, repeat=2)
    rows = {r.impl: r for r in bench_case(make_case(TINY, "bilinear", "zeros", config, collect("test")))}
    assert rows["native"].median_ms > 0 and rows["native"].max_abs_diff == 0
    for impl in ("custom", "ort-custom"):
        assert rows[impl].median_ms > 0 and rows[impl].max_abs_diff <= 1e-5, rows[impl]
    assert rows["ort-kernel"].median_ms is not None or rows["ort-kernel"].note  # ran, or says why not
    assert rows["mmcv"].median_ms is not None or rows["mmcv"].note


def test_a_strategy_that_cannot_run_the_case_gives_its_reason_as_the_note():
    pytest.importorskip("torch")
    from harness.bench.measure import bench_case, make_case
    from harness.worker.fingerprint import collect

    config = BenchConfig(impls=("native", "mmcv", "ort-mmcv"), budget_s=0.01, repeat=2)
    rows = bench_case(make_case(TINY, "nearest", "border", config, collect("test")))
    assert [r.impl for r in rows] == ["native", "mmcv", "ort-mmcv"]
    assert rows[0].median_ms > 0
    for row in rows[1:]:
        assert row.median_ms is None and "mmcv" in row.note, row


def test_kernel_row_on_an_old_torch_exports_through_the_contrib_strategy_with_a_real_cell(monkeypatch):
    """Below opset 16 (torch 1.8) onnxruntime's kernel is com.microsoft::GridSample, by the contrib strategy."""
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed here")
    import harness.bench.measure as measure
    from harness.strategies.grid_sample import Contrib
    from harness.worker.fingerprint import collect

    asked = []

    class Spy(Contrib):
        def unsupported(self, cell, env):
            asked.append((cell, env))
            return super().unsupported(cell, env)

    real = measure.get_strategy
    monkeypatch.setattr(measure, "max_opset", lambda exporter="any": 13)
    monkeypatch.setattr(measure, "get_strategy", lambda f, n: Spy() if n == "contrib" else real(f, n))
    config = BenchConfig(impls=("ort-kernel",), budget_s=0.01, repeat=2)
    case = measure.make_case(TINY, "bilinear", "border", config, collect("old"))
    (row,) = measure.bench_case(case)
    assert row.median_ms is not None and row.max_abs_diff <= 1e-5, row
    ((cell, env),) = asked
    assert (cell.strategy, cell.opset, cell.exporter, cell.env) == ("contrib", 13, "torchscript", "old")
    assert cell.params == {"align_corners": False, "mode": "bilinear", "padding_mode": "border", "rank": 4}
    assert env is case.env


def test_onnxruntime_session_without_arena_keeps_the_graph():
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed here")
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper

    from harness.judge.session import OrtSession

    graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["y"])],
        "neg",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    blob = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8).SerializeToString()
    onnx.checker.check_model(onnx.load_from_string(blob))
    lean = OrtSession(blob, "cpu", 1, arena=False)
    assert lean.blob == blob and lean.threads == 1
    assert not lean.session.get_session_options().enable_cpu_mem_arena
    assert OrtSession(blob, "cpu", 1).session.get_session_options().enable_cpu_mem_arena
    (out,) = lean.timed_call([np.array([1.0, -2.0], dtype=np.float32)])()
    assert out.tolist() == [-1.0, 2.0]
