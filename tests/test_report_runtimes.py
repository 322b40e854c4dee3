"""The runtime ladder: replay records beside the exporting ones, the "where does it run" view, the advisor's
deployment runtime, the upgrade view's groups and runtime pairs, and portability evidence.

tests/resources/replays is a slice of real records: the flow_warp case (static shapes) exported by torch1.8 at
opset 13, torch1.12 at 16 and torch2 at 16 and 23, and those graphs replayed in onnxruntime 1.8.1 to 1.32.0 and
OpenVINO 2023.3.0 and 2026.4.1, with the runtimes' own errors. They sit beside the hand-written exporting
fixtures in tests/resources/records, whose graphs were never replayed.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict

import pandas as pd
import pytest

from harness.report.advisor import advise
from harness.report.cards import AdviceCard
from harness.report.changes import Side, change_kind
from harness.report.ladder import LadderRow, LadderStrategy
from harness.report.load import Loaded, load
from harness.report.model import Page, build_page
from harness.report.runtimes import evidence, exporting, judged, ladder
from harness.report.table import build_frame
from harness.report.upgrade import runtime_diff, runtime_pair_keys

RESOURCES = Path(__file__).parent / "resources"
RECORDS, REPLAYS = RESOURCES / "records", RESOURCES / "replays"
OV = "OpenVINO 2026.4.1"
OV23 = "OpenVINO 2023.3.0"
ORT = ["onnxruntime 1.8.1", "onnxruntime 1.10.0", "onnxruntime 1.14.1", "onnxruntime 1.16.3", "onnxruntime 1.18.1"]
ORT += ["onnxruntime 1.20.1", "onnxruntime 1.32.0"]
REPLAYED_IN = ORT + [OV23, OV]  # the ladder's runtime environments


@pytest.fixture(scope="module")
def loaded() -> Loaded:
    return load([str(RECORDS), str(REPLAYS)])


def strategy(page: Page, family: str, name: str) -> LadderStrategy:
    found = next(f for f in page.ladder.families if f.family == family)
    return next(s for s in found.strategies if s.strategy == name)


def row(found: LadderStrategy, label: str) -> LadderRow:
    return next(r for r in found.rows if r.label.startswith(label))


def card(page: Page, env: str, runtime: str, opset: int = 16, family: str = "grid_sample") -> AdviceCard:
    return next(
        c
        for c in page.advisor.cards
        if (c.env, c.runtime, c.opset, c.device, c.family) == (env, runtime, opset, "cpu", family)
    )


def test_the_ladder_is_onnxruntime_by_version_then_openvino() -> None:
    labels = [OV, "onnxruntime 1.20.1", "onnxruntime 1.8.1", "OpenVINO 2023.3.0", "onnxruntime 1.10.0", "tvm 0.1"]
    assert ladder(labels) == [
        "onnxruntime 1.8.1",
        "onnxruntime 1.10.0",
        "onnxruntime 1.20.1",
        "OpenVINO 2023.3.0",
        OV,
        "tvm 0.1",
    ]


def test_replays_keep_their_exporting_cell_and_name_their_runtime(frame: pd.DataFrame) -> None:
    replays = frame[frame["runtime_env"] != ""]
    assert len(replays) == 157 and not replays["own"].any() and set(replays["case"]) == {"flow_warp"}
    assert ladder(replays["runtime"]) == REPLAYED_IN
    assert set(replays.loc[replays["runtime_name"] == "openvino", "runtime"]) == {OV23, OV}
    homes = {"torch1.8": "1.10.0", "torch1.12": "1.12.1", "torch2": "1.32.0"}
    assert (replays["home"] == "onnxruntime " + replays["env"].map(homes)).all()
    # the runtime's own measurement: "ort" for onnxruntime, "openvino" for OpenVINO; no eager timing in a replay
    ran = replays[replays["verdict"] == "pass"]
    assert ran["lat_rt"].notna().all() and ran["lat_eager"].isna().all()
    assert ran.loc[ran["runtime_name"] == "openvino", "lat_ort"].isna().all()
    # a replay in the exporting environment's own runtime is never run: that column is the exporting cell's
    assert not ((replays["env"] == "torch1.8") & (replays["runtime"] == "onnxruntime 1.10.0")).any()
    assert len(exporting(frame)) == 576 + 20  # the page's cells: the hand-written ones and the slice's


def test_a_replay_in_the_exporting_runtime_stands_for_the_exporting_cell(loaded: Loaded) -> None:
    replay = next(r for r in loaded.records if r.runtime.env == "ort1.10" and r.env == "torch1.12")
    twin = replay.with_(env="torch1.8", fingerprint=replace(replay.fingerprint, onnxruntime="1.10.0"))
    converted = twin.with_(precision="fp16", converter="onnxconverter-common 1.14.0")
    assert list(build_frame([replay, twin, converted])["own"]) == [False, True, False]


def test_cells_that_made_no_graph_carry_their_verdict_to_the_runtimes_that_replayed_their_kind(
    frame: pd.DataFrame,
) -> None:
    everywhere = judged(frame)
    carried = everywhere[everywhere["carried"]]
    assert set(carried["verdict"]) == {"not_applicable", "export_failed"}
    # torch1.8's native export failures hold in every runtime that judged torch1.8's grid_sample graphs at opset 13
    failed = carried[(carried["env"] == "torch1.8") & (carried["strategy"] == "native")]
    assert set(failed["opset"]) == {13} and ladder(failed["runtime"]) == [r for r in REPLAYED_IN if "1.10.0" not in r]
    # torch1.12 was replayed at opset 16 only: its opset-11 export failures say nothing about other runtimes
    assert set(carried.loc[carried["env"] == "torch1.12", "opset"]) == {16}
    # an exporting cell appears once under its own runtime, and never where its graph was replayed
    own = everywhere[everywhere["runtime"] == everywhere["home"]]
    assert len(own) == len(exporting(frame)) and not own["carried"].any()


def test_evidence_says_only_what_records_show(frame: pd.DataFrame) -> None:
    contrib = evidence(frame[frame["strategy"] == "contrib"])
    assert contrib.refused == ("onnxruntime 1.8.1", OV23, OV)
    assert contrib.text.endswith("refused at load by onnxruntime 1.8.1 and OpenVINO 2023.3.0, 2026.4.1")
    custom = evidence(frame[(frame["strategy"] == "custom") & (frame["family"] == "grid_sample")])
    assert {"onnxruntime 1.8.1", OV23, OV} <= set(custom.ran) and not custom.refused
    # export failures make no graph: they say nothing about any runtime
    never = frame[(frame["strategy"] == "native") & (frame["env"] == "torch1.8") & (frame["family"] == "grid_sample")]
    assert evidence(never).text == ""


def test_the_ladder_view_answers_where_each_graph_runs(page: Page) -> None:
    assert page.ladder.runtimes == tuple(ladder(REPLAYED_IN + ["onnxruntime 1.12.1", "onnxruntime 1.23.2"]))
    column = {rt: i for i, rt in enumerate(page.ladder.runtimes)}
    contrib = strategy(page, "grid_sample", "contrib")
    assert "refused at load by onnxruntime 1.8.1 and OpenVINO 2023.3.0, 2026.4.1" in contrib.evidence
    old = row(
        contrib, "torch1.8 · opset 13"
    ).cells  # contrib graphs: no kernel before onnxruntime 1.9, none in OpenVINO
    assert (old[column["onnxruntime 1.8.1"]].text, old[column["onnxruntime 1.8.1"]].tone) == ("0/1", "none")
    assert "GridSample is not a registered function/op" in old[column["onnxruntime 1.8.1"]].messages[0][2]
    assert old[column[OV]].messages[0][0] == "load failed" and old[column[OV23]].tone == "none"
    assert old[column["onnxruntime 1.10.0"]].home and old[column["onnxruntime 1.14.1"]].tone == "all"
    assert old[column["onnxruntime 1.12.1"]].tone == "missing"  # torch1.12's own runtime: never replayed there
    native = row(strategy(page, "grid_sample", "native"), "torch1.12 · opset 16").cells  # opset-16 GridSample
    assert [native[column[rt]].tone for rt in ("onnxruntime 1.8.1", "onnxruntime 1.10.0")] == ["none", "none"]
    assert {native[column[rt]].tone for rt in REPLAYED_IN[2:]} == {"all"}  # every onnxruntime from 1.14, OpenVINO
    assert "(8 of the 9 graphs not replayed here)" in native[column[OV]].title  # the hand-written graphs
    never = row(strategy(page, "grid_sample", "native"), "torch1.8 · opset 13")
    assert never.exported == "0/9" and {c.tone for c in never.cells} == {"nograph"}
    custom = row(strategy(page, "grid_sample", "custom"), "torch1.8 · opset 13").cells  # torch 1.8's rewrite runs
    assert {custom[column[rt]].tone for rt in REPLAYED_IN if rt != "onnxruntime 1.10.0"} == {"all"}  # everywhere


def test_the_advisor_answers_for_a_deployment_runtime(page: Page) -> None:
    assert page.advisor.runtimes == tuple(REPLAYED_IN)
    default = page.advisor.default
    assert default is not None and default.home and (default.env, default.runtime) == ("torch1.8", "onnxruntime 1.10.0")
    home = card(page, "torch1.12", "onnxruntime 1.12.1")
    assert home.home and home.timing_note == "" and home.id == "advice-torch1.12-16-cpu-grid_sample"
    ov = card(page, "torch1.12", OV)
    assert not ov.home and ov.id == "advice-torch1.12-16-cpu-grid_sample-OpenVINO-2026.4.1"
    assert ov.pick is not None and ov.pick.strategy == "native" and "fewer samples" in ov.timing_note
    assert ov.latency_ref == "native OpenVINO"
    contrib = next(r for r in ov.rows if r.strategy == "contrib")
    assert contrib.passes == "0/9" and [g.label for g in contrib.failures] == ["load failed", "not replayed"]
    # torch1.12's contrib graphs are opset 16: onnxruntime 1.10 refuses them too
    assert contrib.evidence.endswith("refused at load by onnxruntime 1.8.1, 1.10.0 and OpenVINO 2023.3.0, 2026.4.1")
    nothing = card(page, "torch1.12", "onnxruntime 1.8.1")  # onnxruntime 1.8 loads none of torch 1.12's graphs
    assert nothing.pick is None and nothing.status == "none"
    # the overview stays each environment's own runtime
    assert all(c is None or c.home for r in page.advisor.overview for c in r.cards)


def test_evidence_is_not_repeated_when_it_says_only_the_own_runtime(page: Page) -> None:
    flows = card(page, "torch2", "onnxruntime 1.32.0", family="control_flow")
    assert all(r.evidence == "" for r in flows.rows)


def test_runtime_pairs_go_up_the_ladder_and_down_from_the_own_runtime() -> None:
    labels = ["onnxruntime 1.8.1", "onnxruntime 1.12.1", "onnxruntime 1.20.1", OV]
    keys = runtime_pair_keys(labels, ["onnxruntime 1.12.1"])
    assert ("onnxruntime 1.12.1", "onnxruntime 1.20.1") in keys and ("onnxruntime 1.20.1", OV) in keys
    assert ("onnxruntime 1.12.1", "onnxruntime 1.8.1") in keys
    assert ("onnxruntime 1.20.1", "onnxruntime 1.8.1") not in keys and len(keys) == 6 + 1


def test_the_upgrade_compares_one_environments_graphs_in_two_runtimes(frame: pd.DataFrame) -> None:
    everywhere = judged(frame)
    advice = advise(everywhere)
    mine = everywhere[everywhere["env"] == "torch1.12"]
    older = runtime_diff(mine, advice, "torch1.12", "onnxruntime 1.12.1", "onnxruntime 1.8.1")
    assert older.counts["now_fails"] == 4 and {c.after for c in older.changes} == {"load_failed"}
    assert [(g.strategy, g.kind) for g in older.groups][:2] == [("native", "now_fails"), ("custom", "now_fails")]
    switch = next(s for s in older.switches if (s.family, s.opset) == ("grid_sample", 16))
    assert (switch.old.text, switch.new.text) == ("custom (torchscript)", "nothing passes")
    assert "not judged in both" in older.gains[-1]  # the hand-written families were never replayed
    newer = runtime_diff(mine, advice, "torch1.12", "onnxruntime 1.12.1", "onnxruntime 1.20.1")
    assert {c.kind for c in newer.changes} <= {"faster", "slower", "accuracy"}  # the same verdicts
    ov = runtime_diff(mine, advice, "torch1.12", "onnxruntime 1.12.1", OV)
    assert [c.strategy for c in ov.changes if c.kind == "now_fails"] == ["contrib"]


def test_the_upgrade_groups_by_family_strategy_and_kind(data: Dict[str, Any]) -> None:
    pair = data["upgrade"]["envs"]["torch1.8"]["torch2"]
    groups = [(g[0], g[1], g[2]) for g in pair["groups"]]
    assert ("grid_sample", "native", "became_applicable") in groups
    assert groups.index(("grid_sample", "native", "became_applicable")) < groups.index(
        ("grid_sample", "custom", "faster")
    )
    families = [g[0] for g in groups]
    assert families == sorted(families, key=["grid_sample", "resize", "layernorm", "gelu", "control_flow"].index)
    runtimes = data["upgrade"]["runtimes"]["torch1.12"]
    assert set(runtimes["onnxruntime 1.12.1"]) == set(REPLAYED_IN)  # up the ladder, and down from its own
    assert set(runtimes[OV23]) == {OV}
    ladder_ = data["upgrade"]["ladders"]["torch1.12"]
    assert ladder_ == ladder(REPLAYED_IN + ["onnxruntime 1.12.1"]) and OV not in runtimes  # the top rung: no upgrade
    assert [k[0] for k in data["changeKinds"]][:3] == ["became_applicable", "now_exports", "now_passes"]


def test_each_kind_of_change() -> None:
    pairs = [  # (verdict, a graph, max_abs) before and after
        [("not_applicable", False, None), ("pass", True, 0.0)],
        [("export_failed", False, None), ("mismatch", True, 0.5)],
        [("load_failed", True, None), ("pass", True, 0.0)],
        [("pass", True, 0.0), ("run_failed", True, None)],
        [("pass", True, 0.0), ("export_failed", False, None)],
        [("pass", True, 0.0), ("not_applicable", False, None)],
        [("load_failed", True, None), ("run_failed", True, None)],
        [("mismatch", True, 0.5), ("mismatch", True, 0.004)],
        [("pass", True, 1e-7), ("pass", True, 3e-7)],
        [("pass", True, 1e-7), ("pass", True, 1e-7)],
        [("pass", True, 1e-7), ("pass", True, 1e-7)],
    ]
    ratios = [math.nan] * 9 + [0.5, 1.5]
    assert [change_kind(Side(*old), Side(*new), r) for (old, new), r in zip(pairs, ratios)] == [
        "became_applicable",
        "now_exports",
        "now_passes",
        "now_fails",
        "no_longer_exports",
        "no_longer_applicable",
        "fails_differently",
        "accuracy",
        "",  # both well inside the tolerance: not a change
        "faster",
        "slower",
    ]


def test_matrix_data_marks_replays_and_links_them_to_their_exporting_cell(data: Dict[str, Any]) -> None:
    own_at = 1 + len(data["cellDims"]) + 1
    assert sum(c[own_at] for c in data["cells"]) == 596
    assert data["dims"]["runtime"][-1] == OV
    replay = next(i for i, d in enumerate(data["details"]) if "of" in d)
    detail = data["details"][replay]
    assert "x" not in detail and "f" not in detail  # shared with the exporting cell, read from it
    origin = data["details"][detail["of"]]
    assert replay in origin["rp"] and data["runtimes"][origin["rt"]]["runtime environment"] is None
    assert data["runtimes"][detail["rt"]]["runtime environment"] in {"ort1.8", "ort1.10", "openvino2026"} | {
        "ort1.14",
        "ort1.16",
        "ort1.18",
        "ort1.20",
        "ort1.32",
        "openvino2023",
    }
    assert data["homes"]["torch2"] == ["onnxruntime 1.23.2", "onnxruntime 1.32.0"]  # a GPU machine's onnxruntime
    assert "refused at load" in data["evidence"]["grid_sample/contrib"]


def test_the_runtime_filter_starts_at_each_environments_own(page: Page) -> None:
    runtime = next(f for f in page.filters if f.dim == "runtime")
    assert runtime.default == "=own" and runtime.extra == (("=own", "each environment's own"),)
    assert runtime.values[0] == "onnxruntime 1.8.1" and runtime.values[-1] == OV
    assert [r.label for r in page.runtimes] == REPLAYED_IN
    assert page.runtimes[0].exported_in == "torch1.8, torch1.12, torch2" and page.replay_runtimes == 9
    assert page.replays == 157 and [f.dim for f in page.filters][-2:] == ["precision", "verdict"]
    choice = next(c for c in page.runtime_choices if c.env == "torch1.12")
    assert (choice.default_old, choice.default_new) == ("onnxruntime 1.12.1", "onnxruntime 1.32.0")


def test_converted_graphs_stay_in_the_matrix_under_their_precision(loaded: Loaded) -> None:
    replay = next(r for r in loaded.records if r.runtime.env == "ort1.32" and r.strategy == "custom")
    fp16 = replay.with_(precision="fp16", converter="onnxconverter-common 1.14.0", artifact="f16")
    page = build_page(Loaded(loaded.records + [fp16]))
    data = json.loads(page.data_json)
    precision = data["cellDims"].index("precision") + 1
    index = next(i for i, c in enumerate(data["cells"]) if data["dims"]["precision"][c[precision]] == "fp16")
    origin = data["details"][index]["of"]  # the fp32 graph it was converted from
    assert (
        data["dims"]["precision"][data["cells"][origin][precision]] == "fp32" and index in data["details"][origin]["rp"]
    )
    assert data["runtimes"][data["details"][index]["rt"]]["converter"] == "onnxconverter-common 1.14.0"
    # not an answer about the exported graph: the ladder, the advisor and the upgrade view are unchanged
    assert page.ladder == build_page(loaded).ladder and page.replays == 158
