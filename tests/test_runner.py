"""Real worker processes: a crash, a hang, a memory hog and a harness bug each cost their cell only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import RESOURCES, ROOT, run_harness

FAULTY = str(RESOURCES / "cases_faulty")


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _by_case(records):
    return {r["case"]: r for r in records}


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("faulty") / "faulty.jsonl"
    proc = run_harness(
        "run",
        "--cases-dir",
        FAULTY,
        "--tag",
        "faulty",
        "--strategy",
        "native",
        "--opset",
        "16",
        "--out",
        str(out),
        "--timeout",
        "20",
        "--memory-limit-mb",
        "3072",
        "--no-latency",
        "--quiet",
        "--jobs",
        "2",
    )
    return proc, out


def test_each_fault_gets_its_verdict_and_the_run_goes_on(faulty_run):
    proc, out = faulty_run
    records = _by_case(_records(out))
    assert set(records) >= {"faulty_segfault", "faulty_hang", "faulty_hog", "faulty_fine", "faulty_harness_bug"}
    seg = records["faulty_segfault"]
    assert seg["verdict"] == "crashed" and "SIGSEGV" in seg["reason"]
    hang = records["faulty_hang"]
    assert hang["verdict"] == "timeout" and "20 s" in hang["reason"]
    hog = records["faulty_hog"]
    assert hog["verdict"] in ("run_failed", "crashed"), hog
    if hog["verdict"] == "run_failed":
        eager = next(s for s in hog["stages"] if s["name"] == "eager")
        assert eager["outcome"] == "failed" and eager["error_type"] in ("RuntimeError", "MemoryError")
    assert records["faulty_fine"]["verdict"] == "pass"
    bug = records["faulty_harness_bug"]
    assert bug["verdict"] == "harness_error" and "KeyError" in bug["reason"]
    assert proc.returncode == 1, proc.stderr  # a harness error is ours: the exit code says so


def test_records_carry_the_contract_keys(faulty_run):
    _, out = faulty_run
    record = _by_case(_records(out))["faulty_fine"]
    for key in (
        "schema_version",
        "env",
        "fingerprint",
        "family",
        "case",
        "params",
        "strategy",
        "opset",
        "actual_opset",
        "exporter",
        "shape_mode",
        "device",
        "dtype",
        "verdict",
        "stages",
        "parity",
        "latency",
        "memory",
    ):
        assert key in record
    for key in ("python", "torch", "onnx", "onnxruntime", "mmcv", "platform", "cpu", "gpu"):
        assert key in record["fingerprint"]
    assert record["actual_opset"] == 16
    assert [s["name"] for s in record["stages"]][:4] == ["build", "eager", "export", "opset"]
    assert record["memory"]["eager.working_set"]["method"] == "rss-hwm: one call's growth, after a warm-up call"


def _grid_args(out, *extra):
    return (
        "run",
        "--case",
        "grid_sample_op",
        "--strategy",
        "native",
        "--opset",
        "16",
        "--out",
        str(out),
        "--no-latency",
        "--no-memory",
        "--quiet",
        *extra,
    )


def _timed_grid_args(out):
    args = [a for a in _grid_args(out) if a != "--no-latency"]
    return (*args, "--latency-budget", "0.3")


def test_resume_skips_finished_cells_and_rerun_repeats_them(tmp_path):
    out = tmp_path / "r.jsonl"
    first = run_harness(*_grid_args(out))
    assert first.returncode == 0, first.stderr
    n = len(_records(out))
    assert n == 24
    again = run_harness(*_grid_args(out))
    assert "0 cells (24 already done, skipped)" in again.stderr and len(_records(out)) == n
    rerun = run_harness(*_grid_args(out, "--rerun"))
    assert rerun.returncode == 0 and len(_records(out)) == 2 * n


def test_interrupted_run_keeps_records_and_resumes(tmp_path):
    out = tmp_path / "r.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT), HARNESS_ENV="testenv")
    proc = subprocess.Popen(
        # with timing on, each cell lasts long enough for the interrupt to land mid-run
        [sys.executable, "-m", "harness", *_timed_grid_args(out)],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as at a terminal: a shell's background job (CI started with `&`) would hand SIGINT down ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 120
    while time.time() < deadline and (not out.exists() or len(out.read_text().splitlines()) < 3):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    kept = _records(out)
    assert 3 <= len(kept) < 24
    resumed = run_harness(*_grid_args(out))
    assert resumed.returncode == 0
    records = _records(out)
    twice = [
        (r["cell_id"], r["verdict"], r["reason"])
        for r in records
        if [x["cell_id"] for x in records].count(r["cell_id"]) > 1
    ]
    assert len(records) == 24 and len({r["cell_id"] for r in records}) == 24, (twice, resumed.stderr)


def test_shards_together_equal_the_whole(tmp_path):
    whole = tmp_path / "whole.jsonl"
    run_harness(*_grid_args(whole))
    merged = {}
    for i in (1, 2, 3):
        part = tmp_path / f"part{i}.jsonl"
        proc = run_harness(*_grid_args(part, "--shard", f"{i}/3"))
        assert proc.returncode == 0, proc.stderr
        records = _records(part)
        assert records and not set(merged) & {r["cell_id"] for r in records}
        merged.update({r["cell_id"]: r["verdict"] for r in records})
    assert merged == {r["cell_id"]: r["verdict"] for r in _records(whole)}


def test_bad_input_is_one_line_naming_the_fix(tmp_path):
    proc = run_harness("run", "--case", "no_such_case", "--out", str(tmp_path / "x.jsonl"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "harness list" in proc.stderr
    proc = run_harness("run", "--exporter", "onnxscript", "--out", str(tmp_path / "x.jsonl"))
    assert proc.returncode == 2 and "torchscript, dynamo" in proc.stderr
    proc = run_harness("run", "--cases-dir", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "no such folder" in proc.stderr
