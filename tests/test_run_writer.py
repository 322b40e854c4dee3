"""The results writer: whole lines, fsynced; resume keys follow the code and the case files."""

from __future__ import annotations

from pathlib import Path

from harness.campaign.keys import code_hash
from harness.campaign.writer import ResultsWriter
from harness.record import CellRecord, Parity, Verdict, read_results


def _record(i: int, verdict: Verdict = Verdict.PASS) -> CellRecord:
    return CellRecord(
        env="e",
        family="grid_sample",
        case="c",
        params={"i": i},
        strategy="custom",
        opset=11,
        exporter="torchscript",
        shape_mode="static",
        device="cpu",
        dtype="float32",
        verdict=verdict,
        finished_at="2026-11-30T00:00:00Z",
        cell_id=f"c{i}",
        parity=Parity(float("inf"), float("inf"), 1e-4, 1e-4, float("inf"), "1 NaN where the reference has numbers"),
    )


def test_records_append_and_read_back(tmp_path):
    path = tmp_path / "r.jsonl"
    w = ResultsWriter(path)
    w.write(_record(1))
    w.write(_record(2, Verdict.HARNESS_ERROR))
    w.close()
    found = read_results(path)
    assert [r.cell_id for r in found.records] == ["c1", "c2"]
    assert found.records[0].parity.max_abs is None  # infinity is not JSON
    assert found.records[1].verdict is Verdict.HARNESS_ERROR


def test_a_torn_last_line_does_not_join_the_next_record(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_record(1).to_line() + "\n" + '{"schema_version": 2, "cell_id": "c2", "ver')
    w = ResultsWriter(path)
    w.write(_record(3))
    w.close()
    found = read_results(path)
    assert [r.cell_id for r in found.records] == ["c1", "c3"]
    assert [s.line for s in found.skipped] == [2]


def test_the_code_hash_follows_the_case_files_in_use(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "mine.py").write_text("A = 1\n")
    before = code_hash([str(cases)])
    assert code_hash([str(cases)]) == before and code_hash() != before
    (cases / "mine.py").write_text("A = 2\n")
    assert code_hash([str(cases)]) != before


def test_the_replay_code_hash_covers_the_code_that_judges_a_stored_graph():
    from harness.campaign.keys import REPLAY_CODE

    package = Path(__file__).resolve().parents[1] / "harness"
    assert all((package / part).exists() for part in REPLAY_CODE)  # every part names real code
    assert code_hash(only=REPLAY_CODE) != code_hash() and code_hash(only=REPLAY_CODE) == code_hash(only=REPLAY_CODE)
    assert code_hash(only=("replay",)) != code_hash(only=("judge",))  # the replay's own code counts
