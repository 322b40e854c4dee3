"""Reading results files through harness.record: discovery, torn lines, refusals, migration and de-duplication."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from harness.cli import main as harness_main
from harness.record import CellRecord, Verdict
from harness.report.load import dedupe, discover, load


def main(argv):
    """`python -m harness report ARGV`, in this process."""
    return harness_main(["report", *argv])


RECORDS = Path(__file__).parent / "resources" / "records"


def first_record() -> Dict[str, Any]:
    return json.loads((RECORDS / "torch1.8.jsonl").read_text(encoding="utf-8").splitlines()[0])


def write_lines(path: Path, lines: List[Any]) -> Path:
    """Each item a line: a dict as JSON, a str as it is (a torn line)."""
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path


def test_discover_searches_folders_recursively_and_keeps_files_once() -> None:
    files, refusals = discover([str(RECORDS), str(RECORDS / "torch2.jsonl")])
    names = [p.relative_to(RECORDS).as_posix() for p in files]
    assert "gpu/torch2-cuda.jsonl" in names
    assert names.count("torch2.jsonl") == 1
    assert names == sorted(names)
    assert refusals == []


def test_discover_refuses_missing_paths_and_empty_folders(tmp_path: Path) -> None:
    files, refusals = discover([str(tmp_path / "nowhere"), str(tmp_path)])
    assert files == []
    assert [r.reason for r in refusals] == ["no such file or folder", "no *.jsonl files in this folder"]
    assert "nox -s matrix" in refusals[1].line()


def test_a_torn_line_in_the_middle_keeps_every_intact_record_and_is_named(tmp_path: Path) -> None:
    good = first_record()
    later = dict(first_record(), opset=good["opset"] + 4)
    path = write_lines(tmp_path / "torn.jsonl", [good, json.dumps(good)[:150], later])
    loaded = load([str(path)])
    assert [r.opset for r in loaded.records] == [good["opset"], good["opset"] + 4]
    assert loaded.refusals == []
    assert [(s.path, s.line) for s in loaded.skipped] == [(str(path), 2)]
    assert loaded.skipped[0].describe().startswith(f"{path}:2: skipped, not valid JSON")
    assert [(s.path, s.records, [x.line for x in s.skipped]) for s in loaded.sources] == [(str(path), 2, [2])]


def test_the_torn_fixture_is_read_and_its_torn_line_named() -> None:
    loaded = load([str(RECORDS / "truncated.jsonl")])
    assert len(loaded.records) == 2 and loaded.refusals == []
    assert [s.line for s in loaded.skipped] == [2]
    assert "the next `nox -s matrix` of that environment" in loaded.skipped[0].describe()


def test_another_schema_version_is_refused_whole_with_the_fix() -> None:
    loaded = load([str(RECORDS / "schema99.jsonl")])
    assert loaded.records == [] and loaded.sources == []
    assert [r.line() for r in loaded.refusals] == [
        "{}: line 1: schema_version 99 is not readable by this harness (reads 1, 2, 3 and 4); render it with the "
        "harness version that wrote it, or move it out of the results folder".format(RECORDS / "schema99.jsonl")
    ]


@pytest.mark.parametrize(
    "foreign, expected",
    [
        ([1, 2], "line 2: a JSON list instead of an object"),
        ({"hello": "world"}, "line 2: schema_version null is not readable"),
        (lambda r: r.pop("verdict"), "line 2: missing required keys: verdict"),
        (lambda r: r.update(opset="eleven"), "line 2: key 'opset' should be int"),
        (lambda r: r.update(verdict="exploded"), 'line 2: unknown verdict "exploded"'),
    ],
)
def test_foreign_json_refuses_the_whole_file(tmp_path: Path, foreign: Any, expected: str) -> None:
    if callable(foreign):
        change: Callable[[Dict[str, Any]], Any] = foreign
        foreign = first_record()
        change(foreign)
    path = write_lines(tmp_path / "foreign.jsonl", [first_record(), foreign, dict(first_record(), opset=13)])
    loaded = load([str(path)])
    assert loaded.records == [] and loaded.sources == []  # the good lines around it are not half-read
    assert len(loaded.refusals) == 1
    assert loaded.refusals[0].reason.startswith(expected)


def test_blank_lines_are_ignored_and_optional_keys_may_be_absent(tmp_path: Path) -> None:
    record = {
        k: v for k, v in first_record().items() if k not in ("latency", "memory", "export", "fingerprint", "stages")
    }
    path = tmp_path / "sparse.jsonl"
    path.write_text("\n" + json.dumps(record) + "\n\n", encoding="utf-8")
    loaded = load([str(path)])
    assert loaded.refusals == [] and loaded.skipped == [] and len(loaded.records) == 1
    assert loaded.records[0].latency == {} and loaded.records[0].fingerprint.torch is None


def test_schema_1_records_are_read_through_the_migration() -> None:
    loaded = load([str(RECORDS / "torch2.jsonl")])
    assert loaded.migrated == {1: 231}
    assert loaded.sources[0].migrated == ((1, 231),)
    references = {(r.family, r.reference) for r in loaded.records}
    assert references == {
        ("grid_sample", "native"),
        ("resize", "native"),
        ("layernorm", "native"),
        ("gelu", "native"),
        ("control_flow", "eager"),
    }
    record = loaded.records[0]
    assert record.schema_version == 4 and record.precision == "fp32" and record.env_limits == {}
    assert record.kind == "export"
    assert (record.runtime.name, record.runtime.version) == ("onnxruntime", record.fingerprint.onnxruntime)


def test_schema_4_records_are_not_counted_as_migrated_and_older_ones_are(tmp_path: Path) -> None:
    current = CellRecord.from_json(dict(first_record(), opset=17, latency=None, memory=None)).to_json()
    assert current["schema_version"] == 4 and current["kind"] == "export"
    older = dict(current, schema_version=2, opset=18)
    del older["kind"]
    three = dict(current, schema_version=3, opset=19, memory={"eager": {"peak_bytes": 10, "method": "rss"}})
    loaded = load([str(write_lines(tmp_path / "now.jsonl", [current, first_record(), older, three]))])
    assert len(loaded.records) == 4
    assert loaded.migrated == {1: 1, 2: 1, 3: 1}
    migrated = next(r for r in loaded.records if r.opset == 19)  # one call's growth: eager's working set, no footprint
    assert set(migrated.memory) == {"eager.working_set"} and migrated.memory["eager.working_set"].peak_bytes == 10


def test_dedupe_keeps_the_newest_by_finished_at_whatever_the_reading_order() -> None:
    def typed(**changes: Any) -> CellRecord:
        return CellRecord.from_json(dict(first_record(), **changes))

    old = typed(finished_at="2026-11-29T17:15:01Z", verdict="timeout")
    new = typed(finished_at="2026-11-30T09:00:00+00:00", verdict="pass")
    other = typed(opset=99)
    for order in ([old, new, other], [new, old, other]):
        kept, dropped = dedupe(order)
        assert dropped == 1
        assert [r.verdict for r in kept if r.opset != 99] == [Verdict.PASS]
    # On a tie the later-read record wins; the parameters' key order does not split a cell.
    reordered = old.with_(params=dict(reversed(list(old.params.items()))), verdict=Verdict.MISMATCH)
    kept, dropped = dedupe([old, reordered])
    assert dropped == 1 and kept[0].verdict == Verdict.MISMATCH


def test_loading_the_fixtures_merges_shards_and_refuses_the_unreadable() -> None:
    loaded = load([str(RECORDS)])
    assert len(loaded.records) == 576
    assert loaded.superseded == 5  # 3 re-run cells, and the 2 intact records of the torn file (an older run)
    assert [Path(r.path).name for r in loaded.refusals] == ["schema99.jsonl"]
    assert [(Path(s.path).name, s.line) for s in loaded.skipped] == [("truncated.jsonl", 2)]
    assert loaded.migrated == {1: 581}
    assert not any(r.env == "torch3" for r in loaded.records)
    assert not any(r.run_id == "20261129T160210-a1b2" for r in loaded.records)  # the torn file's older run
    rerun = [r for r in loaded.records if r.run_id == "20261130T090000-0c1d"]
    assert sorted((r.case, r.verdict.value) for r in rerun) == [("gelu", "pass"), ("loop_scan", "pass")]
    assert not any(r.run_id == "20261128T120000-0000" for r in loaded.records)


def test_cli_names_torn_lines_on_stderr_and_renders_the_rest(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = write_lines(tmp_path / "torn.jsonl", [first_record(), '{"schema_version": 1, "env": "torc'])
    code = main(["--results", str(path), "--out", str(tmp_path / "site" / "index.html")])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.err.splitlines() == [
        f"{path}:2: skipped, not valid JSON (a torn write: Unterminated string starting at); the next `nox -s "
        "matrix` of that environment sets the line aside and measures its cell again"
    ]
    assert "1 cells from 1 files, 0 refused, 1 torn lines skipped" in captured.out


def test_cli_exit_code_is_2_when_nothing_is_readable(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    foreign = write_lines(tmp_path / "foreign.jsonl", [{"not": "a record"}])
    code = main(["--results", str(RECORDS / "schema99.jsonl"), str(foreign), "--out", str(tmp_path / "x.html")])
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert err[0].startswith("refused {}: line 1: schema_version 99".format(RECORDS / "schema99.jsonl"))
    assert err[1].startswith(f"refused {foreign}: line 1: schema_version null")
    assert err[2].startswith("nothing to render")
    assert not (tmp_path / "x.html").exists()


def test_cli_help_returns_zero(capsys: pytest.CaptureFixture) -> None:
    assert main(["--help"]) == 0
    assert "--results" in capsys.readouterr().out
