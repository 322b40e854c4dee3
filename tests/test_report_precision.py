"""The precision dimension: converted graphs (fp16, int8) in the judged table, the advisor's target precision, the
precision view (tolerances, a row per strategy, the error-latency chart), the matrix's precision pivots, and the
platform of each environment.

tests/resources/precisions is a slice of real records: the flow_warp graphs of tests/resources/replays converted
to fp16 and int8 (int8-dynamic does not apply to them: no weights) and replayed in onnxruntime 1.14.1, 1.32.0 and
OpenVINO 2026.4.1; and one more torch2 cell (naive, opset 11, dynamic shapes) whose int8-static conversion failed
in the quantizer, with its replays.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pandas as pd
import pytest

from harness.judge.parity import PRECISION_TOLERANCES
from harness.record import CellRecord, Fingerprint, Verdict, platform_tag
from harness.report.advisor import advise
from harness.report.load import Loaded, load
from harness.report.model import Page, build_page, environments
from harness.report.precision import with_fp32_ratio
from harness.report.recipes import conversion_call, recipe_rows
from harness.report.render import render
from harness.report.runtimes import judged
from harness.report.table import CONVERTER

RESOURCES = Path(__file__).parent / "resources"
REPLAYS, PRECISIONS = RESOURCES / "replays", RESOURCES / "precisions"
CONVERTED_IN = ["onnxruntime 1.14.1", "onnxruntime 1.32.0", "OpenVINO 2026.4.1"]
FAILED_CELL = {"env": "torch2", "strategy": "naive", "opset": 11, "shape_mode": "dynamic"}


@pytest.fixture(scope="module")
def loaded() -> Loaded:
    return load([str(REPLAYS), str(PRECISIONS)])


@pytest.fixture(scope="module")
def everywhere(frame: pd.DataFrame) -> pd.DataFrame:
    return judged(frame)


def the_failed_cell(table: pd.DataFrame) -> pd.DataFrame:
    mask = pd.Series(True, index=table.index)
    for column, value in FAILED_CELL.items():
        mask &= table[column] == value
    return table[mask]


def test_conversions_that_failed_are_named_after_the_converter(frame: pd.DataFrame) -> None:
    conversions = frame[frame["runtime_env"] == "convert"]
    assert set(conversions["runtime"]) == {CONVERTER} and not conversions["own"].any()
    assert set(conversions["verdict"]) == {"not_applicable", "export_failed"}
    failed = conversions[conversions["verdict"] == "export_failed"]
    assert len(failed) == 1 and failed["message"].iloc[0].startswith("[ONNXRuntimeError] : 10 : INVALID_GRAPH")
    assert set(frame.loc[frame["precision"] != "fp32", "converter"]) == {
        "onnxconverter-common 1.16.0",
        "onnxruntime 1.32.0 quantization",
    }


def test_the_judged_table_holds_each_precision_in_the_runtimes_that_judged_it(everywhere: pd.DataFrame) -> None:
    converted = everywhere[everywhere["precision"] != "fp32"]
    assert sorted(set(converted["runtime"])) == sorted(CONVERTED_IN)  # never the converter, nor ort 1.8 or 1.20
    int8 = the_failed_cell(converted[converted["precision"] == "int8-static"])
    # the failed conversion, carried to every runtime that judges int8-static graphs, as its own record
    assert sorted(int8["runtime"]) == sorted(CONVERTED_IN) and set(int8["verdict"]) == {"export_failed"}
    assert int8["carried"].all() and set(int8["runtime_env"]) == {"convert"}
    dynamic = converted[converted["precision"] == "int8-dynamic"]
    assert dynamic.empty  # no runtime judged an int8-dynamic graph here: nothing to carry it to
    fp32 = everywhere[(everywhere["precision"] == "fp32") & ~everywhere["own"].astype(bool)]
    assert not (fp32["runtime_env"] == "convert").any()


def test_the_advisor_answers_for_a_target_precision(page: Page) -> None:
    adv = page.advisor
    assert adv.precisions == ("fp32", "fp16", "int8-static")
    converted = [c for c in adv.cards if c.precision != "fp32"]
    assert converted and not any(c.home for c in converted)  # judged in replays only, never the exporting env's
    assert {c.runtime for c in converted} == set(CONVERTED_IN)
    card = next(
        c
        for c in converted
        if (c.env, c.opset, c.precision, c.runtime) == ("torch2", 11, "int8-static", CONVERTED_IN[1])
    )
    assert card.id == "advice-torch2-11-cpu-grid_sample-onnxruntime-1.32.0-int8-static"
    naive = next(r for r in card.rows if r.strategy == "naive")
    assert "export_failed" in [g.verdict for g in naive.failures]  # the conversion failed: a failure like any other
    fp16 = next(c for c in converted if (c.env, c.precision, c.runtime) == ("torch1.12", "fp16", CONVERTED_IN[2]))
    assert fp16.pick is not None and fp16.pick.strategy == "native" and fp16.timing_note  # timed in a replay
    assert all(c.pick is None for c in converted if c.precision == "int8-static")  # 5% of the range is not enough
    assert adv.default is not None and adv.default.precision == "fp32"  # the page opens on the graphs as exported


def test_advice_per_precision_is_grouped_apart(everywhere: pd.DataFrame) -> None:
    advice = advise(everywhere)
    keys = {a.key for a in advice}
    assert ("torch1.8", "onnxruntime 1.32.0", 13, "cpu", "grid_sample", "fp16") in keys
    assert ("torch1.8", "onnxruntime 1.32.0", 13, "cpu", "grid_sample", "fp32") in keys
    assert all(a.precision == "fp32" for a in advice if a.home)


def test_the_precision_view_states_tolerances_and_compares_with_fp32(page: Page, frame: pd.DataFrame) -> None:
    view = page.precision
    assert view.precisions == ("fp16", "int8-dynamic", "int8-static") and view.runtimes == tuple(CONVERTED_IN)
    assert [t.precision for t in view.tolerances] == ["fp32", "fp16", "int8-dynamic", "int8-static", "bf16"]
    assert [(m.precision, m.made_by) for m in view.made_by][0] == ("fp16", "onnxconverter-common 1.16.0")
    fp16 = view.tolerances[1]
    assert (fp16.atol, fp16.rtol) == ("1% of the reference output's range", "0.01")
    assert view.tolerances[3].atol.startswith(f"{PRECISION_TOLERANCES['int8-static'][0]:.0%}")
    assert view.tolerances[3].rtol == "none"
    rows = {(r.family, r.strategy): r for r in view.rows}
    assert list(rows)[0] == ("grid_sample", "native")  # the family's reference first, as everywhere on the page
    naive = rows[("grid_sample", "naive")].cells
    dynamic, static = naive[1], naive[2]
    assert (dynamic.judged, dynamic.tone) == (0, "empty") and dynamic.not_converted > 0
    assert static.failed_conversions == 1 and static.passed == 0
    ratios = with_fp32_ratio(frame)
    timed = ratios[ratios["ratio"].notna()]
    assert not timed.empty and (timed["runtime"] != CONVERTER).all()
    one = timed.iloc[0]
    twin = frame[
        (frame["precision"] == "fp32")
        & (frame["runtime"] == one["runtime"])
        & (frame["case"] == one["case"])
        & (frame["params"] == one["params"])
        & (frame["strategy"] == one["strategy"])
        & (frame["env"] == one["env"])
        & (frame["opset"] == one["opset"])
        & (frame["shape_mode"] == one["shape_mode"])
    ]
    assert one["ratio"] == pytest.approx(one["lat_rt"] / twin["lat_rt"].iloc[0])  # the same graph in fp32, same runtime
    assert view.chart is not None and view.chart.svg and 'aria-label="Accuracy against speed' in view.chart.svg


def test_the_matrix_pivots_on_precision(data: Dict[str, Any]) -> None:
    pivots = [axes for _, axes in data["pivots"]]
    assert ["precision", "runtime"] in pivots and ["runtime", "precision"] in pivots
    assert data["dims"]["runtime"][-1] == CONVERTER  # the converter after every runtime
    assert data["dims"]["precision"] == ["fp32", "fp16", "int8-dynamic", "int8-static"]  # as the columns go
    precision, verdict = data["cellDims"].index("precision") + 1, len(data["cellDims"]) + 1
    int8 = data["dims"]["precision"].index("int8-static")
    index = next(
        i for i, c in enumerate(data["cells"]) if c[precision] == int8 and data["verdicts"][c[verdict]][0] == "mismatch"
    )
    detail = data["details"][index]
    assert "of" in detail  # linked to the fp32 cell it was converted from
    assert len(detail["p"]) == 9 and detail["p"][6] is not None  # the mean absolute error, with the parity


def test_the_runtimes_table_says_which_precisions_each_judged(page: Page) -> None:
    rows = {r.label: r for r in page.runtimes}
    assert CONVERTER not in rows and "onnxruntime 1.32.0" in rows
    assert rows["onnxruntime 1.32.0"].precisions == "fp32, fp16, int8-static"
    assert rows["onnxruntime 1.8.1"].precisions == "fp32"


def test_each_environment_shows_its_platform(loaded: Loaded) -> None:
    exporting = [r for r in loaded.records if r.runtime.env is None]
    arm = exporting[0].with_(
        env="torch2@linux_aarch64",
        fingerprint=Fingerprint(
            **dict(exporting[0].fingerprint.to_json(), platform="Linux-6.8.0-aarch64-with-glibc2.39")
        ),
    )
    rows = environments(exporting + [arm], ["torch1.8", "torch1.12", "torch2", "torch2@linux_aarch64"])
    assert {r.platform for r in rows if r.env != arm.env} == {"linux_x86_64"}
    assert next(r for r in rows if r.env == arm.env).platform == "linux_aarch64"


@pytest.mark.parametrize(
    "platform, tag",
    [
        ("Linux-6.18.44-fc-v857-x86_64-with-glibc2.36", "linux_x86_64"),
        ("Linux-6.1.0-28-amd64-x86_64-with-glibc2.36", "linux_x86_64"),
        ("Linux-6.8.0-1015-azure-aarch64-with-glibc2.39", "linux_aarch64"),
        ("Windows-10-10.0.20348-SP0", "win_amd64"),
        ("macOS-14.4-arm64-arm-64bit", "macos_aarch64"),
        (None, "—"),
        ("SunOS-5.11", "SunOS-5.11"),
    ],
)
def test_platform_tags_are_the_environment_files_words(platform: Any, tag: str) -> None:
    assert platform_tag(platform) == tag


def test_records_without_precision_data_render_no_precision_view(tmp_path: Path) -> None:
    lines = (REPLAYS / "torch2.jsonl").read_text(encoding="utf-8").splitlines()
    page = build_page(Loaded([CellRecord.from_json(json.loads(line)) for line in lines]))
    assert page.precision.rows == () and page.precision.chart is None
    assert page.advisor.precisions == ("fp32",)


def _search(loaded: Loaded, verdict: str, recipe: Dict[str, Any]) -> CellRecord:
    exported = next(r for r in loaded.records if r.kind == "export" and r.family == "grid_sample")
    return exported.with_(
        kind="search",
        precision="int8-static-recipe",
        converter="onnxruntime 1.32.0 quantization",
        verdict=Verdict(verdict),
        reason=None if verdict == "pass" else "search: no recipe within 12 conversions",
        recipe=recipe,
    )


RECIPE = {
    "from": "int8-static-weighted",
    "kept_float": [["/loc/Gemm</script><b>", "Gemm"], ["/loc/MatMul", "MatMul"]],
    "nodes": 67,
    "float_nodes": 64,
    "conversions": 5,
    "budget": 12,
    "found": True,
    "psnr": 43.8,
    "latency_vs_fp32": 1.1,
    "bytes_vs_fp32": 0.4,
    "options": {},
}


def test_a_recipe_is_shown_with_its_nodes_its_budget_and_the_call_that_makes_it(loaded: Loaded) -> None:
    found, missed = _search(loaded, "pass", RECIPE), _search(loaded, "mismatch", dict(RECIPE, found=False))
    rows = recipe_rows([found, missed])
    assert [r.outcome for r in rows if r.tone == "some"] == ["passes with 2 nodes kept float"]
    row = next(r for r in rows if r.tone == "some")
    assert (row.float_nodes, row.conversions, row.psnr) == ("64 of 67", "5 of 12", "43.8 dB")
    assert "nodes_to_exclude=['/loc/Gemm</script><b>', '/loc/MatMul']" in row.call
    assert "op_types_to_quantize=['Conv', 'MatMul', 'Gemm']" in row.call and "quant_pre_process" in row.call
    assert next(r for r in rows if r.tone == "none").outcome.startswith("none within 5 conversions")
    page = build_page(Loaded(list(loaded.records) + [found, missed], loaded.sources, loaded.refusals))
    assert page.precision.recipes == rows
    html = render(page)
    assert "/loc/Gemm&lt;/script&gt;&lt;b&gt;" in html and "/loc/Gemm</script><b>" not in html  # escaped everywhere


def test_plain_precisions_have_their_plain_converter_call() -> None:
    assert "OnnxModel(onnx.load('model.onnx'))" in conversion_call("fp16", ())
    assert "use_symbolic_shape_infer=False" in conversion_call("fp16-recipe", ["n"], {"symbolic": False})
    assert "quantize_dynamic" in conversion_call("int8-dynamic", ())
    assert "op_types_to_quantize" not in conversion_call("int8-static", ())
