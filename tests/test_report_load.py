"""Reading results files: discovery, refusals with one clear line, and de-duplication of re-run cells."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.report import main
from harness.report.load import READABLE_SCHEMA_VERSION, check_record, dedupe, discover, load, read_file

RECORDS = Path(__file__).parent / "resources" / "records"


def first_record() -> dict:
    return json.loads((RECORDS / "torch1.8.jsonl").read_text(encoding="utf-8").splitlines()[0])


def write_lines(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
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


def test_another_schema_version_is_refused_with_the_fix() -> None:
    records, refusal = read_file(RECORDS / "schema99.jsonl")
    assert records == []
    assert refusal is not None
    assert refusal.line() == (
        "{}: schema_version 99 is not readable by this harness (reads {}); re-run `nox -s matrix` with this "
        "version or render with the harness that wrote it".format(RECORDS / "schema99.jsonl", READABLE_SCHEMA_VERSION)
    )


def test_a_truncated_line_refuses_the_whole_file() -> None:
    records, refusal = read_file(RECORDS / "truncated.jsonl")
    assert records == []
    assert refusal is not None
    assert "line 3 is not valid JSON" in refusal.reason
    assert "re-run `nox -s matrix`" in refusal.fix


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda r: r.pop("verdict"), "line 2: missing required keys: verdict"),
        (lambda r: r.update(env=None, case=None), "line 2: missing required keys: env, case"),
        (lambda r: r.update(opset="eleven"), "line 2: key 'opset' should be int"),
        (lambda r: r.update(opset=True), "line 2: key 'opset' should be int"),
        (lambda r: r.update(verdict="exploded"), 'line 2: unknown verdict "exploded"'),
    ],
)
def test_records_without_what_the_matrix_needs_are_refused(tmp_path: Path, change, expected: str) -> None:
    good, bad = first_record(), first_record()
    change(bad)
    _, refusal = read_file(write_lines(tmp_path / "bad.jsonl", [good, bad]))
    assert refusal is not None
    assert refusal.reason.startswith(expected)


def test_a_line_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "list.jsonl"
    path.write_text("[1, 2]\n", encoding="utf-8")
    _, refusal = read_file(path)
    assert refusal is not None and "JSON list instead of an object" in refusal.reason


def test_blank_lines_are_ignored_and_optional_keys_may_be_absent(tmp_path: Path) -> None:
    record = {
        k: v for k, v in first_record().items() if k not in ("latency", "memory", "export", "fingerprint", "stages")
    }
    path = tmp_path / "sparse.jsonl"
    path.write_text("\n" + json.dumps(record) + "\n\n", encoding="utf-8")
    records, refusal = read_file(path)
    assert refusal is None and len(records) == 1
    check_record(record)


def test_dedupe_keeps_the_newest_by_finished_at_whatever_the_reading_order() -> None:
    old = dict(first_record(), finished_at="2026-11-29T17:15:01Z", verdict="timeout")
    new = dict(first_record(), finished_at="2026-11-30T09:00:00+00:00", verdict="pass")
    other = dict(first_record(), opset=99)
    for order in ([old, new, other], [new, old, other]):
        kept, dropped = dedupe(order)
        assert dropped == 1
        assert [r["verdict"] for r in kept if r["opset"] != 99] == ["pass"]
    # On a tie the later-read record wins; the parameters' key order does not split a cell.
    reordered = dict(old, params=dict(reversed(list(old["params"].items()))), verdict="mismatch")
    kept, dropped = dedupe([old, reordered])
    assert dropped == 1 and kept[0]["verdict"] == "mismatch"


def test_loading_the_fixtures_merges_shards_and_refuses_the_unreadable() -> None:
    loaded = load([str(RECORDS)])
    assert len(loaded.records) == 576
    assert loaded.superseded == 3
    assert sorted(Path(r.path).name for r in loaded.refusals) == ["schema99.jsonl", "truncated.jsonl"]
    assert not any(r["env"] in ("torch3", "torch1.12-truncated") for r in loaded.records)
    rerun = [r for r in loaded.records if r["run_id"] == "20261130T090000-0c1d"]
    assert sorted((r["case"], r["verdict"]) for r in rerun) == [("gelu", "pass"), ("loop_scan", "pass")]
    assert not any(r["run_id"] == "20261128T120000-0000" for r in loaded.records)


def test_cli_exit_code_is_2_when_nothing_is_readable(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(
        [
            "--results",
            str(RECORDS / "schema99.jsonl"),
            str(RECORDS / "truncated.jsonl"),
            "--out",
            str(tmp_path / "x.html"),
        ]
    )
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert err[0].startswith("refused {}: schema_version 99".format(RECORDS / "schema99.jsonl"))
    assert err[1].startswith("refused {}: line 3".format(RECORDS / "truncated.jsonl"))
    assert err[2].startswith("nothing to render")
    assert not (tmp_path / "x.html").exists()


def test_cli_help_returns_zero(capsys: pytest.CaptureFixture) -> None:
    assert main(["--help"]) == 0
    assert "--results" in capsys.readouterr().out
