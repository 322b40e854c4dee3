from __future__ import annotations

import json

from harness.results import ResultsWriter, code_hash, done_keys, read_records, resume_key


def _record(i, verdict="pass"):
    return {
        "schema_version": 1,
        "cell_id": f"c{i}",
        "fingerprint_hash": "f",
        "harness_version": "v",
        "code_hash": "h",
        "verdict": verdict,
        "parity": {"max_abs": float("inf")},
    }


def test_records_append_and_read_back(tmp_path):
    path = tmp_path / "r.jsonl"
    w = ResultsWriter(path)
    w.write(_record(1))
    w.write(_record(2, "harness_error"))
    w.close()
    records = list(read_records(path))
    assert [r["cell_id"] for r in records] == ["c1", "c2"]
    assert records[0]["parity"]["max_abs"] is None  # infinity is not JSON
    assert done_keys(path) == {resume_key("c1", "f", "v", "h")}  # a harness error is always retried
    assert resume_key("c1", "f", "v", "other code") not in done_keys(path)


def test_a_torn_last_line_is_skipped_and_the_next_write_starts_clean(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(_record(1)) + "\n" + '{"schema_version": 1, "cell_id": "c2", "ver')
    assert [r["cell_id"] for r in read_records(path)] == ["c1"]
    w = ResultsWriter(path)
    w.write(_record(3))
    w.close()
    assert [r["cell_id"] for r in read_records(path)] == ["c1", "c3"]


def test_the_code_hash_follows_the_case_files_in_use(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "mine.py").write_text("A = 1\n")
    before = code_hash([str(cases)])
    assert code_hash([str(cases)]) == before and code_hash() != before
    (cases / "mine.py").write_text("A = 2\n")
    assert code_hash([str(cases)]) != before
