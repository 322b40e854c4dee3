from __future__ import annotations

import pytest

from harness.campaign.keys import in_shard, parse_shard
from harness.errors import UserError
from harness.plan.registry import Case
from harness.plan.spec import CellSpec, Selection, default_opsets, expand


def _strategies(family):
    return ["native", "custom"]


def _case(**kw):
    base = dict(
        name="c", family="f", model=lambda p, op: None, inputs=lambda p, s, g: (), params=({"mode": "a"}, {"mode": "b"})
    )
    base.update(kw)
    return Case(**base)


def test_default_opsets_add_the_newest():
    assert default_opsets(13) == (9, 11, 13, 16)
    assert default_opsets(23) == (9, 11, 13, 16, 23)


def test_expand_is_the_full_product_in_a_stable_order():
    cells = list(expand("e", [_case()], _strategies, Selection(), 13))
    assert len(cells) == 2 * 2 * 4 * 2  # params x strategies x opsets x exporters
    assert cells == list(expand("e", [_case()], _strategies, Selection(), 13))
    assert len({c.cell_id for c in cells}) == len(cells)


def test_expand_filters():
    sel = Selection(strategies=("custom",), opsets=(11,), exporters=("torchscript",))
    cells = list(expand("e", [_case()], _strategies, sel, 13))
    assert [(c.strategy, c.opset, c.exporter) for c in cells] == [("custom", 11, "torchscript")] * 2
    assert list(expand("e", [_case()], _strategies, Selection(tags=("nope",)), 13)) == []


def test_case_opsets_replace_the_defaults_and_keep_the_newest():
    cells = list(expand("e", [_case(opsets=(11, 18), exporters=("torchscript",))], _strategies, Selection(), 20))
    assert sorted({c.opset for c in cells}) == [11, 18, 20]


def test_cell_round_trips_through_a_dict():
    cell = next(iter(expand("e", [_case()], _strategies, Selection(), 13)))
    again = CellSpec.from_dict(cell.to_dict())
    assert again == cell and again.cell_id == cell.cell_id
    assert again.params == {"mode": "a"}


@pytest.mark.parametrize("text", ["0/2", "3/2", "x", "1-2"])
def test_bad_shard_is_a_user_error(text):
    with pytest.raises(UserError, match="--shard"):
        parse_shard(text)


def test_shards_partition_the_cells():
    cells = list(expand("e", [_case()], _strategies, Selection(), 17))
    parts = [[c for c in cells if in_shard(c.cell_id, (i, 3))] for i in (1, 2, 3)]
    assert sum(len(p) for p in parts) == len(cells)
    assert set().union(*[set(p) for p in parts]) == set(cells)
    assert all(parts)


def test_environment_limits_keep_cells_out_and_say_why():
    from harness.plan.applicable import EnvLimits, split_by_limits

    limits = EnvLimits("1.8.1", 13, {"dynamo": "torch 1.8.1 has no dynamo exporter"})
    cells = list(expand("e", [_case(opsets=(11, 16))], _strategies, Selection(), 13))
    within, beyond = split_by_limits(cells, limits)
    assert {c.opset for c in within} == {11, 13} and {c.exporter for c in within} == {"torchscript"}
    assert beyond == {"opsets above 13": 8, "exporter dynamo": 8}  # an opset too high is counted as that alone
    assert limits.describe() == {
        "opsets above 13": "torch 1.8.1 exports opsets up to 13",
        "exporter dynamo": "torch 1.8.1 has no dynamo exporter",
    }


def test_without_a_checkout_the_built_in_cases_are_missing_and_that_is_said(monkeypatch, tmp_path):
    from harness.plan import registry

    monkeypatch.setattr(registry, "BUILTIN_CASES_DIR", tmp_path / "no-checkout" / "cases")
    with pytest.raises(UserError, match="runs from a checkout of the repository; .* --cases-dir DIR"):
        registry.load_cases([])
    mine = tmp_path / "mine"
    mine.mkdir()
    assert registry.load_cases([str(mine)]) is not None  # your own cases still load without the built-in ones
