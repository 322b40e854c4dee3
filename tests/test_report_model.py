"""Building the view-models from the fixture records: labels, ordering, matrix data, advice and upgrades."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pandas as pd
import pytest

from harness.record import Portability, Verdict, parse_version, portability_label
from harness.report import matrix
from harness.report.advisor import advise
from harness.report.load import Loaded, load
from harness.report.model import Page, env_order
from harness.report.upgrade import cell_changes, diff
from harness.report.vocab import VERDICT_STYLE, VERDICTS, natural_key, params_label, varying_keys

RECORDS = Path(__file__).parent / "resources" / "records"


@pytest.fixture(scope="module")
def loaded() -> Loaded:
    return load([str(RECORDS)])


@pytest.mark.parametrize(
    "params, shown, label",
    [
        ({"mode": "bilinear", "padding_mode": "zeros", "align_corners": False}, (), "bilinear/zeros/ac=F"),
        (
            {"mode": "bilinear", "align_corners": True, "rank": 4, "grid_range": 1.25},
            ("mode", "align_corners"),
            "bilinear/ac=T",
        ),
        ({"rank": 4, "grid_range": 1.25, "size": [64, 64]}, (), "rank=4/gr=1.25/size=64x64"),
        ({}, (), "—"),
    ],
)
def test_params_label(params: Dict[str, Any], shown: Tuple[str, ...], label: str) -> None:
    assert params_label(params, shown) == label


def test_only_varying_parameters_are_labelled_unless_there_is_one_combination() -> None:
    many = [{"mode": m, "rank": 4} for m in ("bilinear", "nearest")]
    assert varying_keys(many) == ["mode"]
    assert varying_keys(many[:1]) == ["mode", "rank"]


def test_small_helpers_order_versions_and_labels_naturally() -> None:
    assert parse_version("2.13.0+cpu") > parse_version("1.12.1") > parse_version("1.8.1")
    assert sorted(["r=10", "r=4"], key=natural_key) == ["r=4", "r=10"]


def test_every_verdict_has_a_style_in_the_legend_order() -> None:
    assert set(VERDICT_STYLE) == set(Verdict)
    assert [style.verdict for style in VERDICTS] == list(Verdict)
    assert all(style.name == style.verdict.value and style.glyph and style.label for style in VERDICTS)


def test_environments_go_from_the_oldest_torch_to_the_newest(loaded: Loaded, frame: pd.DataFrame) -> None:
    assert env_order(frame, loaded.records) == ["torch1.8", "torch1.12", "torch2"]


def test_matrix_rows_group_by_family_case_then_strategy(data: Dict[str, Any]) -> None:
    rows = data["rows"]
    assert [r[0] for r in rows[:1]] == ["grid_sample"]
    families = list(dict.fromkeys(r[0] for r in rows))
    assert families == ["grid_sample", "resize", "layernorm", "gelu", "control_flow"]
    op_rows = [r for r in rows if r[1] == "grid_sample_op"]
    assert list(dict.fromkeys(r[2] for r in op_rows)) == ["native", "custom", "mmcv", "naive", "contrib"]
    assert [r[4] for r in op_rows if r[2] == "native"] == [
        "bicubic/border/ac=F",
        "bilinear/border/ac=F",
        "bilinear/reflection/ac=F",
        "bilinear/zeros/ac=F",
        "bilinear/zeros/ac=T",
        "nearest/zeros/ac=F",
    ]
    stn = [r for r in rows if r[1] == "grid_sample_stn"]
    assert stn[0][4] == "bilinear/zeros/ac=F/batch=2/size=64x64"
    contrib = next(r for r in rows if r[2] == "contrib")
    assert contrib[3] == "ort_contrib" and contrib[6] == "onnxruntime contrib op (runs only in onnxruntime)"
    assert next(r for r in rows if r[2] == "custom_op")[6] == portability_label("custom_domain")
    assert data["portability"] == {p.value: portability_label(p.value) for p in Portability}


def test_every_cell_is_placed_once_with_its_details(data: Dict[str, Any], loaded: Loaded) -> None:
    assert len(data["cells"]) == len(data["details"]) == len(loaded.records)
    assert data["dims"]["env"] == ["torch1.8", "torch1.12", "torch2"]
    assert data["dims"]["opset"] == [9, 11, 13, 16, 18]
    verdicts = [v[0] for v in data["verdicts"]]
    seen = {verdicts[c[1 + len(data["cellDims"])]] for c in data["cells"]}
    assert seen == set(verdicts)  # the fixtures cover every verdict


def test_details_carry_stages_parity_costs_and_the_fingerprint(data: Dict[str, Any], loaded: Loaded) -> None:
    index = next(i for i, r in enumerate(loaded.records) if r.verdict == Verdict.MISMATCH and r.strategy == "naive")
    detail = data["details"][index]
    assert [s[0] for s in detail["st"]][:3] == ["build", "eager", "export"]
    failed = [s for s in detail["st"] if s[1] == "failed"]
    assert failed[0][0] == "parity" and "clamped corner" in data["strings"][failed[0][4]]
    # parity as [max_abs, max_rel, atol, rtol, min_passing_atol, shapes_checked, mean_abs, psnr]
    assert detail["p"][4] == pytest.approx(1.3799 * 0.998, rel=1e-3)
    ok = next(s for s in detail["st"] if s[1] == "ok")
    assert len(ok) == 3 and ok[2] == round(ok[2], 3)  # no trailing nulls; seconds to the millisecond shown
    assert data["fingerprints"][detail["f"]]["torch"] == loaded.records[index].fingerprint.torch
    assert list(data["fingerprints"][detail["f"]])[-2:] == ["cuda", "driver"]  # shown even when null
    passing = next(i for i, r in enumerate(loaded.records) if r.verdict == Verdict.PASS and r.device == "cuda")
    assert set(data["details"][passing]["l"]) == {"eager", "ort"}
    # schema 1's eager peak on CUDA is one call's allocation: its working set, read through the migration
    assert data["strings"][data["details"][passing]["m"]["eager.working_set"][1]] == "cuda-max-memory-allocated"
    run_id, _, harness = data["details"][passing]["id"]  # shared by many cells: stored once
    assert (data["strings"][run_id], data["strings"][harness]) == (loaded.records[passing].run_id, "0.1.0")


def test_repeated_messages_and_fingerprints_are_stored_once(data: Dict[str, Any]) -> None:
    assert len(data["strings"]) == len(set(data["strings"]))
    assert len(data["fingerprints"]) == 4  # three CPU environments and one GPU machine


def test_advisor_defaults_to_the_oldest_environment_on_cpu(page: Page) -> None:
    card = page.advisor.default
    assert card is not None
    assert (card.env, card.device, card.family, card.status) == ("torch1.8", "cpu", "grid_sample", "all")
    assert card.pick is not None and card.pick.strategy == "custom"
    assert card.rows[1].strategy == "contrib"
    assert "contrib (torchscript) passes only 6/7" in card.why
    failure = card.rows[1].failures[0]
    assert (failure.verdict, failure.combos) == ("mismatch", ("grid_sample_op: bicubic/border/ac=F",))


def test_advisor_picks_native_where_the_exporter_supports_it(page: Page) -> None:
    cards = {(c.env, c.opset, c.device, c.family): c for c in page.advisor.cards}
    torch2 = cards[("torch2", 16, "cpu", "grid_sample")]
    assert torch2.pick is not None and (torch2.pick.strategy, torch2.pick.exporter) == ("native", "torchscript")
    assert torch2.latency_ref == "native ORT"
    beyond = cards[("torch1.8", 16, "cpu", "grid_sample")]
    assert (beyond.status, beyond.pick, beyond.not_applicable) == (
        "not_applicable",
        None,
        ("torch 1.8.1 exports up to opset 13",),
    )
    # A harness error is left out of the rate, and said so.
    flows = cards[("torch2", 16, "cpu", "control_flow")]
    assert (flows.rows[0].strategy, flows.rows[0].passes, flows.rows[0].harness_errors) == ("script", "1/1", 1)
    assert "1 combination not measured (harness error)" in flows.why


def test_overview_has_one_row_per_environment_device_and_opset(page: Page) -> None:
    keys = [(r.env, r.device, r.opset) for r in page.advisor.overview]
    assert keys[0] == ("torch1.8", "cpu", 9)
    assert ("torch2", "cuda", 16) in keys
    assert page.advisor.families[0] == "grid_sample"


def test_upgrade_cells_that_change(frame: pd.DataFrame) -> None:
    changes = cell_changes(frame, "torch1.8", "torch2")
    kinds = {c.kind for c in changes}
    assert {"became_applicable", "now_passes", "faster"} <= kinds
    fixed = [c for c in changes if c.kind == "became_applicable" and frame.at[c.new_idx, "family"] == "grid_sample"]
    fixed_native = [c for c in fixed if frame.at[c.new_idx, "strategy"] == "native"]
    assert fixed_native and all(frame.at[c.new_idx, "opset"] == 16 for c in fixed_native)
    for change in changes:
        if change.kind in ("faster", "slower"):
            assert abs(change.ratio - 1) > 0.2
            assert frame.at[change.old_idx, "verdict"] == frame.at[change.new_idx, "verdict"]


def test_upgrade_switches_say_what_to_use_after(frame: pd.DataFrame) -> None:
    result = diff(frame, advise(frame), "torch1.8", "torch2")
    by_key = {(s.family, s.opset, s.device): s for s in result.switches}
    same = by_key[("grid_sample", 11, "cpu")]
    assert (same.old.text, same.new.text, same.changed) == ("custom (torchscript)", "custom (torchscript)", False)
    assert "ORT latency" in same.gain
    newly = by_key[("grid_sample", 16, "cpu")]
    assert (newly.old.state, newly.new.text, newly.changed) == ("not_applicable", "native (torchscript)", True)
    assert by_key[("grid_sample", 9, "cpu")].new.state == "not_run"
    assert any(g == "opsets run only after the upgrade: 18" for g in result.gains)


def test_every_ordered_pair_is_precomputed(data: Dict[str, Any]) -> None:
    envs = data["dims"]["env"]
    for old in envs:
        for new in envs:
            assert (new in data["upgrade"]["envs"].get(old, {})) == (old != new)
    pair = data["upgrade"]["envs"]["torch1.8"]["torch2"]
    assert set(pair) == {"counts", "gains", "switches", "groups"}
    for kind, count in pair["counts"].items():
        assert count == sum(len(g[3]) for g in pair["groups"] if g[2] == kind)
    assert data["upgrade"]["runtimes"] == {}  # no replays among these records


def test_environment_table_has_one_row_per_fingerprint(page: Page) -> None:
    rows: List[Tuple[str, Dict[str, str]]] = [(r.env, dict(r.fingerprint)) for r in page.environments]
    assert [env for env, _ in rows] == ["torch1.8", "torch1.12", "torch2", "torch2"]
    gpu = [fp for env, fp in rows if fp["gpu"] != "—"]
    assert gpu == [dict(gpu[0], gpu="NVIDIA H200")]


def test_page_summary(page: Page) -> None:
    assert page.cells == 576
    assert page.superseded == 5
    assert len(page.refusals) == 1
    assert page.skipped == 1
    assert page.migrated == "581 of schema 1"
    assert page.references == "native for grid_sample, resize, layernorm, gelu; eager for control_flow"
    assert page.envs == ("torch1.8", "torch1.12", "torch2")
    assert page.upgrade_default == ("torch1.12", "torch2")  # the newest step: the upgrade a user takes next
    assert {lg.name: lg.count for lg in page.legend}["harness_error"] == 1
    assert [f.dim for f in page.filters] == [
        "family",
        "case",
        "strategy",
        "env",
        "runtime",
        "opset",
        "exporter",
        "shape_mode",
        "device",
        "precision",
        "verdict",
    ]


def test_rows_put_the_family_reference_first_as_the_records_name_it(frame: pd.DataFrame) -> None:
    family = frame[frame["case"] == "gelu"].copy()
    twin = family.assign(strategy="a_rewrite", reference="zz_reference")
    own = family.assign(strategy="zz_reference", reference="zz_reference")
    both = pd.concat([twin, own], ignore_index=True)
    labels = {(c, p): p for c, p in zip(both["case"], both["params"])}
    order = [r[2] for r in matrix.row_order(both, labels)]
    assert list(dict.fromkeys(order)) == ["zz_reference", "a_rewrite"]


def test_dumps_lines_puts_each_cell_on_its_own_line() -> None:
    text = matrix.dumps_lines({"a": 1, "cells": [[1, 2], [3]], "details": []}, json.dumps)
    assert json.loads(text) == {"a": 1, "cells": [[1, 2], [3]], "details": []}
    assert "[1, 2],\n[3]" in text


def test_an_upgrade_leaves_out_the_latency_noise_of_a_graph_that_is_the_same(loaded: Loaded, frame: pd.DataFrame):
    """torch 2.15's TorchScript exporter writes torch 2.13's graphs but for the producer version: on one runtime
    their latencies differ by the timer alone, which the upgrade view must not call slower or faster."""
    from harness.report.upgrade import same_graphs

    moved = [c for c in cell_changes(frame, "torch1.8", "torch2") if c.kind in ("faster", "slower")]
    assert moved
    first = moved[0]
    old, new = loaded.records[first.old_idx], loaded.records[first.new_idx]
    replay = new.with_(kind="replay", judged_with=f"{old.env}/{old.cell_id}")
    assert same_graphs([old, new, replay]) == {(0, 1), (1, 0)}
    same = frozenset((c.old_idx, c.new_idx) for c in moved)
    kept = diff(frame, advise(frame), "torch1.8", "torch2", same=same)  # onnxruntime 1.10 against 1.32: the runtime's
    assert sum(kept.counts[k] for k in ("faster", "slower")) == len(moved)
    one_runtime = frame.assign(runtime="onnxruntime 1.32.0")
    left = diff(one_runtime, advise(one_runtime), "torch1.8", "torch2", same=same)
    assert left.counts["faster"] == left.counts["slower"] == 0
    assert any(g.startswith(f"{len(moved)} latency changes left out: the same graph") for g in left.gains)
