"""The record shared by runner and reporter: round trips, the schema migrations, and the one reader's policy."""

from __future__ import annotations

import json

import pytest
from conftest import RESOURCES

from harness.record import (
    SCHEMA_VERSION,
    CellRecord,
    Portability,
    RecordError,
    Verdict,
    canonical_params,
    parse_version,
    portability_label,
    read_results,
    set_aside_torn_lines,
)

RECORDS = RESOURCES / "records"


def _lines(name):
    return [json.loads(line) for line in (RECORDS / name).read_text().splitlines() if line.strip()]


def test_every_fixture_record_round_trips_through_its_type():
    for name in ("torch1.8.jsonl", "torch1.12.jsonl", "torch2.jsonl", "gpu/torch2-cuda.jsonl"):
        for data in _lines(name):
            record = CellRecord.from_json(data)
            assert CellRecord.from_json(record.to_json()) == record
            assert record.schema_version == SCHEMA_VERSION


def test_schema_1_is_read_through_its_migration():
    data = _lines("torch2.jsonl")[0]
    assert data["schema_version"] == 1 and "reference" not in data
    record = CellRecord.from_json(data)
    assert record.reference == "native"
    assert record.runtime.name == "onnxruntime" and record.runtime.version == data["fingerprint"]["onnxruntime"]
    assert record.precision == "fp32"
    flow = dict(data, family="control_flow", strategy="traced")
    assert CellRecord.from_json(flow).reference == "eager"


def test_schema_2_gets_its_kind_and_a_replay_its_runtime_fingerprint():
    """Schema 2 implied a record's kind by its runtime's environment; schema 3 says it."""
    exported = json.loads((RESOURCES / "replays" / "torch1.12.jsonl").read_text().splitlines()[0])
    replayed = json.loads((RESOURCES / "replays" / "replay-ort1.14.jsonl").read_text().splitlines()[0])
    converted = json.loads((RESOURCES / "precisions" / "convert.jsonl").read_text().splitlines()[0])
    assert {d["schema_version"] for d in (exported, replayed, converted)} == {2}
    assert "kind" not in exported and "runtime_fingerprint" not in replayed
    export, replay, conversion = (CellRecord.from_json(d) for d in (exported, replayed, converted))
    assert (export.kind, replay.kind, conversion.kind) == ("export", "replay", "conversion")
    assert export.runtime_fingerprint is None and conversion.converter
    runtime = replay.runtime_fingerprint
    assert runtime.onnxruntime == replay.runtime.version == "1.14.1" and runtime.python == replay.runtime.python
    assert runtime.torch is None and replay.fingerprint.torch.startswith("1.8.1")  # the exporting environment's
    assert CellRecord.from_json(replay.to_json()) == replay and replay.key() != export.key()
    with pytest.raises(RecordError, match="unknown record kind"):
        CellRecord.from_json(dict(replay.to_json(), kind="recipe"))


@pytest.mark.parametrize(
    "change, words",
    [
        ({"schema_version": 99}, "schema_version 99"),
        ({"schema_version": True}, "schema_version true"),
        ({"verdict": "splendid"}, "unknown verdict"),
        ({"opset": "11"}, "key 'opset' should be int"),
        ({"env": None}, "missing required keys: env"),
    ],
)
def test_what_is_not_a_record_of_ours_says_why(change, words):
    data = dict(_lines("torch2.jsonl")[0], **change)
    with pytest.raises(RecordError) as caught:
        CellRecord.from_json(data)
    assert words in caught.value.reason and caught.value.kind in ("schema", "foreign", "malformed")


def test_a_torn_line_in_the_middle_keeps_every_intact_record(tmp_path):
    lines = (RECORDS / "torch2.jsonl").read_text().splitlines()
    torn = lines[:10] + [lines[10][: len(lines[10]) // 2]] + lines[11:]
    path = tmp_path / "torch2.jsonl"
    path.write_text("\n".join(torn) + "\n")
    found = read_results(path)
    assert found.refusal is None and found.migrated == {1: len(lines) - 1}
    assert len(found.records) == len(lines) - 1
    assert [(s.path, s.line) for s in found.skipped] == [(str(path), 11)]
    assert f"{path}:11" in found.skipped[0].describe() and "nox -s matrix" in found.skipped[0].describe()


def test_another_schema_or_foreign_json_refuses_the_whole_file(tmp_path):
    assert read_results(RECORDS / "schema99.jsonl").refusal is not None
    foreign = tmp_path / "other.jsonl"
    foreign.write_text(json.dumps(_lines("torch2.jsonl")[0]) + "\n" + json.dumps([1, 2]) + "\n")
    found = read_results(foreign)
    assert found.records == [] and "line 2" in found.refusal.reason


def test_torn_lines_are_set_aside_so_a_rerun_mends_the_file(tmp_path):
    lines = (RECORDS / "torch2.jsonl").read_text().splitlines()[:5]
    path = tmp_path / "torch2.jsonl"
    path.write_text("\n".join(lines[:2] + ['{"torn'] + lines[2:]) + "\n")
    moved, aside = set_aside_torn_lines(path)
    assert moved == 1 and aside.read_text() == '{"torn\n'
    found = read_results(path)
    assert len(found.records) == 5 and not found.skipped
    assert set_aside_torn_lines(path) == (0, None)


def test_the_shared_words():
    assert parse_version("1.12.1+cu102") == (1, 12, 1)
    assert parse_version("2.13.0.dev20260101") == (2, 13, 0)
    assert parse_version(None) == () and parse_version("garbage") == ()
    assert canonical_params({"b": 1, "a": [True]}) == '{"a":[true],"b":1}'
    assert portability_label("ort_contrib").startswith("onnxruntime contrib op")
    assert portability_label("martian") == "unknown portability (martian)"
    assert [v.value for v in Verdict][:2] == ["pass", "mismatch"] and str(Verdict.TIMEOUT) == "timeout"
    assert Portability("standard") is Portability.STANDARD


@pytest.mark.parametrize(
    "change, words",
    [
        ({"env_limits": ["x"]}, "'env_limits' should be a JSON dict"),
        ({"fingerprint": "abc"}, "'fingerprint' should be a JSON dict"),
        ({"stages": "ok"}, "'stages' should be a JSON list"),
        ({"tags": "abc"}, "'tags' should be a JSON list"),
        ({"stages": [{"name": "a", "outcome": "ok", "seconds": "x"}]}, "Stage.seconds"),
        (
            {"latency": {"eager": {"median_s": "x", "iqr_s": 1, "samples": 1, "threads": 1, "noisy": False}}},
            "Timing.median_s",
        ),
        ({"env_limits": {"a": 1}, "verdict": "pass", "memory": {"ort": {"peak_bytes": "1"}}}, "Peak.peak_bytes"),
    ],
)
def test_a_record_edited_into_another_shape_is_refused_as_malformed(change, words):
    data = dict(_lines("torch2.jsonl")[0], **change)
    with pytest.raises(RecordError) as caught:
        CellRecord.from_json(data)
    assert words in caught.value.reason and caught.value.kind == "malformed"
