"""The page's divergences: a table per family (runtime and precision by the op type of the first diverging node),
the first diverging nodes behind the ladder's mismatching squares and in the cells' details; read from a slice of
real records (`nox -s diverge` on the default matrix: divergence records, the mismatches they locate, their
exporting cells and the trusted replays)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from harness.record import CellRecord
from harness.report.divergence import STATED, divergences, op_label
from harness.report.load import load

DIVERGENCES = Path(__file__).parent / "resources" / "divergences"


@pytest.fixture(scope="module")
def loaded():
    return load([str(DIVERGENCES)])


def test_each_family_table_counts_every_divergence_once(page, loaded):
    found = divergences(loaded.records)
    view = page.divergence
    assert view.records == len(found) > 0 and view.located == sum(r.divergence.node is not None for r in found)
    for family in view.families:
        mine = [r for r in found if r.family == family.family]
        assert sum(row.total for row in family.rows) == len(mine)
        assert [sum(row.counts[i] for row in family.rows) for i in range(len(family.ops))] == [
            Counter(op_label(r.divergence) for r in mine)[op] for op in family.ops
        ]
        assert STATED not in family.ops[:-1]  # the stated reasons come last
        for row in family.rows:
            assert " against " in row.label and sum(row.counts) == row.total


def test_divergence_and_trace_records_are_no_cells_of_the_matrix(page, loaded, data):
    cells = [r for r in loaded.records if r.kind not in ("divergence", "trace")]
    assert len(data["cells"]) == len(cells)


def test_a_mismatching_cells_details_say_where_it_first_goes_wrong(loaded, data, page):
    cells = [r for r in loaded.records if r.kind not in ("divergence", "trace")]
    located = {
        (r.env, r.cell_id, r.precision, r.runtime.name, r.runtime.version): r
        for r in divergences(loaded.records)
        if r.divergence.node is not None
    }
    shown = 0
    for record, detail in zip(cells, data["details"]):
        found = located.get((record.env, record.cell_id, record.precision, record.runtime.name, record.runtime.version))
        if found is not None:
            assert detail["dv"][1] == found.divergence.where and detail["dv"][3] == found.divergence.max_abs
            shown += 1
        else:
            assert "dv" not in detail or detail["dv"][1] == "no node found"
    assert shown == len(located) > 0


def test_the_ladders_mismatching_squares_name_their_first_diverging_node(page, loaded):
    fp32 = [r for r in divergences(loaded.records) if r.precision == "fp32" and r.divergence.node is not None]
    named = Counter()
    for family in page.ladder.families:
        for strategy in family.strategies:
            for row in strategy.rows:
                for cell in row.cells:
                    for op, count in cell.first_nodes:
                        named[op.split(" (against ")[0]] += count
    assert sum(named.values()) == len(fp32) > 0
    assert named == Counter(op_label(r.divergence) for r in fp32)


def test_the_rendered_page_escapes_a_hostile_node_name(tmp_path):
    from harness.cli import main

    hostile = "<script>alert('node')</script>"
    for path in DIVERGENCES.glob("*.jsonl"):
        lines = []
        for line in path.read_text(encoding="utf-8").splitlines():
            record = CellRecord.from_json(json.loads(line))
            if record.divergence is not None and record.divergence.node is not None:
                record = record.with_(divergence=replace(record.divergence, node=hostile))
            lines.append(record.to_line())
        (tmp_path / path.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "page" / "index.html"
    assert main(["report", "--results", str(tmp_path), "--out", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert hostile not in html and html.count("<script") == 2
    assert '<section id="divergence">' in html and "first diverging node" in html
