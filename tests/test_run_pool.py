"""The worker pool on its own: real worker processes, one of which dies mid-cell."""

from __future__ import annotations

import pytest
from conftest import RESOURCES

from harness.campaign.options import Options
from harness.campaign.pool import WorkerConfig, WorkerPool
from harness.plan.registry import get_case, load_cases
from harness.plan.spec import CellSpec
from harness.record import Verdict
from harness.worker.fingerprint import collect

FAULTY = str(RESOURCES / "cases_faulty")


def _cell(case):
    load_cases([FAULTY])
    family = get_case(case).family
    return CellSpec("poolenv", family, case, "{}", "native", 16, "torchscript", "static", "cpu", "float32")


def _config(tmp_path, **changes):
    """Real workers on the faulty cases, one thread, no timing: each test changes what it is about."""
    base = dict(
        env_name="poolenv",
        options=Options(threads=1, latency=False, memory=False),
        cases_dirs=(FAULTY,),
        timeout_s=60,
        log_path=tmp_path / "worker.log",
    )
    return WorkerConfig(**{**base, **changes})


def _pool(config, size=1):
    """A pool whose own records (a crash, a timeout) are blank records of the cell."""
    fingerprint = collect("poolenv").fingerprint
    make = lambda c, v, r: c.record(fingerprint, v, reference="native", portability="", tags=(), reason=r)  # noqa: E731
    return WorkerPool(config, make_record=make, size=size)


def test_a_dead_worker_costs_its_cell_and_the_next_cell_gets_a_fresh_one(tmp_path):
    fingerprint = collect("poolenv").fingerprint
    made = []

    def make_record(cell, verdict, reason):
        made.append((cell.case, verdict))
        return cell.record(fingerprint, verdict, reference="native", portability="standard", tags=(), reason=reason)

    outcomes, started = [], []
    cells = [_cell("faulty_segfault"), _cell("faulty_fine"), _cell("faulty_fine")]
    WorkerPool(_config(tmp_path), make_record=make_record, size=1).run(cells, outcomes.append, started.append)
    assert [o.cell.case for o in outcomes] == ["faulty_segfault", "faulty_fine", "faulty_fine"]
    assert started == cells
    crashed, fine, again = (o.record for o in outcomes)
    assert crashed.verdict is Verdict.CRASHED and "SIGSEGV" in crashed.reason
    assert made == [("faulty_segfault", Verdict.CRASHED)]  # the pool made only the crash's record
    assert fine.verdict is Verdict.PASS and again.verdict is Verdict.PASS
    assert all(o.wall_s > 0 and o.started_at.endswith("Z") for o in outcomes)


def test_pinned_workers_each_run_on_their_own_core_and_a_replacement_keeps_it(tmp_path):
    import os

    core = sorted(os.sched_getaffinity(0))[-1]
    pool = _pool(_config(tmp_path, cpus=(core,)))
    seen = []
    pool.run([_cell("faulty_segfault"), _cell("faulty_fine")], lambda o: seen.append(pool.workers[0].cpus))
    assert seen == [[core], [core]]  # the worker that replaced the crashed one is pinned to the same core


def test_two_workers_one_hung_past_its_limit_the_others_answers_kept_and_its_late_end_ignored(tmp_path):
    """Two workers whose lines share one inbox: a hang is killed at the limit, its stream's end (read after the
    kill) must not count against the worker that replaced it, and the other worker's cells go on meanwhile."""
    pool = _pool(_config(tmp_path, timeout_s=15), size=2)
    outcomes = []
    cells = [_cell("faulty_hang"), _cell("faulty_fine"), _cell("faulty_fine"), _cell("faulty_fine")]
    pool.run(cells, outcomes.append)
    verdicts = sorted((o.cell.case, o.record.verdict.value) for o in outcomes)
    assert verdicts == [("faulty_fine", "pass")] * 3 + [("faulty_hang", "timeout")]
    hang = next(o for o in outcomes if o.cell.case == "faulty_hang")
    assert "15 s" in hang.record.reason and hang.wall_s >= 15
    assert outcomes[-1].cell.case == "faulty_hang"  # the fine cells did not wait for it


def test_a_dead_workers_exit_status_in_words_on_posix_and_windows():
    from harness.campaign.pool import describe_exit

    assert describe_exit(-11) == "worker killed by SIGSEGV"
    assert describe_exit(-9) == "worker killed by SIGKILL"
    assert describe_exit(1) == "worker exited with code 1"
    # Windows gives the exception's NTSTATUS as the (unsigned) exit code: 3221225477 for 0xC0000005
    assert describe_exit(3221225477) == "worker died of an access violation (exit status 0xc0000005)"
    assert describe_exit(0xC00000FD).startswith("worker died of a stack overflow")
    assert describe_exit(0xC0000409).startswith("worker died of a fail-fast abort")
    assert describe_exit(0xC0000135) == "worker died of a Windows exception (exit status 0xc0000135)"


FAKE_WORKER = """
import json, os, sys

mode = sys.argv[sys.argv.index("--mode") + 1]
sys.stdout.write(json.dumps({"ready": True, "cpus": None}) + "\\n")
sys.stdout.flush()
for line in sys.stdin:
    job = json.loads(line)
    if mode == "partial":  # dies in the middle of its answer, saying why on stderr
        sys.stdout.write('{"cell_id": "' + job["cell_id"][:4])
        sys.stdout.flush()
        sys.stderr.write("dying mid-answer for " + job["cell_id"] + "\\n")
        sys.stderr.flush()
        os._exit(3)
    sys.stdout.write("this is no answer\\n")  # mode "garbage": a line that is not JSON
    sys.stdout.flush()
"""


@pytest.mark.parametrize(
    ("mode", "verdict", "reason"),
    [
        ("partial", Verdict.CRASHED, "worker exited with code 3"),
        ("garbage", Verdict.HARNESS_ERROR, "the worker's answer does not read as JSON: b'this is no answer"),
    ],
)
def test_a_worker_that_dies_mid_answer_or_answers_garbage_costs_its_cell_and_the_run_goes_on(
    tmp_path, monkeypatch, mode, verdict, reason
):
    (tmp_path / "fake_worker.py").write_text(FAKE_WORKER, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the pool puts the repository first and keeps this
    config = _config(tmp_path, module="fake_worker", extra=("--mode", mode), log_path=tmp_path / "w.log")
    pool = _pool(config, size=2)
    outcomes = []
    cells = [_cell("faulty_fine"), _cell("faulty_segfault"), _cell("faulty_hang")]
    pool.run(cells, outcomes.append)
    assert sorted(o.cell.case for o in outcomes) == sorted(c.case for c in cells)
    assert all(o.record.verdict is verdict and o.record.reason.startswith(reason) for o in outcomes), outcomes
    if mode == "partial":  # every worker's stderr, whole lines, in the one log
        logged = (tmp_path / "w.log").read_text().splitlines()
        assert sorted(logged) == sorted(f"dying mid-answer for {c.cell_id}" for c in cells)
