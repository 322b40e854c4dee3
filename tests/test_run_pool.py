"""The worker pool on its own: real worker processes, one of which dies mid-cell."""

from __future__ import annotations

from conftest import RESOURCES

from harness.plan.registry import get_case, load_cases
from harness.plan.spec import CellSpec
from harness.record import Verdict
from harness.run.pool import WorkerConfig, WorkerPool
from harness.worker.fingerprint import collect
from harness.worker.options import Options

FAULTY = str(RESOURCES / "cases_faulty")


def _cell(case):
    load_cases([FAULTY])
    family = get_case(case).family
    return CellSpec("poolenv", family, case, "{}", "native", 16, "torchscript", "static", "cpu", "float32")


def test_a_dead_worker_costs_its_cell_and_the_next_cell_gets_a_fresh_one(tmp_path):
    fingerprint = collect("poolenv").fingerprint
    made = []

    def make_record(cell, verdict, reason):
        made.append((cell.case, verdict))
        return cell.record(fingerprint, verdict, reference="native", portability="standard", tags=(), reason=reason)

    config = WorkerConfig(
        env_name="poolenv",
        options=Options(threads=1, latency=False, memory=False),
        cases_dirs=(FAULTY,),
        timeout_s=60,
        log_path=tmp_path / "worker.log",
    )
    outcomes, started = [], []
    cells = [_cell("faulty_segfault"), _cell("faulty_fine"), _cell("faulty_fine")]
    WorkerPool(config, make_record=make_record, size=1).run(cells, outcomes.append, started.append)
    assert [o.cell.case for o in outcomes] == ["faulty_segfault", "faulty_fine", "faulty_fine"]
    assert started == cells
    crashed, fine, again = (o.record for o in outcomes)
    assert crashed.verdict is Verdict.CRASHED and "SIGSEGV" in crashed.reason
    assert made == [("faulty_segfault", Verdict.CRASHED)]  # the pool made only the crash's record
    assert fine.verdict is Verdict.PASS and again.verdict is Verdict.PASS
    assert all(o.wall_s > 0 and o.started_at.endswith("Z") for o in outcomes)


def test_pinned_workers_each_run_on_their_own_core_and_a_replacement_keeps_it(tmp_path):
    import os

    fingerprint = collect("poolenv").fingerprint
    core = sorted(os.sched_getaffinity(0))[-1]
    config = WorkerConfig(
        env_name="poolenv",
        options=Options(threads=1, latency=False, memory=False),
        cases_dirs=(FAULTY,),
        timeout_s=60,
        log_path=tmp_path / "worker.log",
        cpus=(core,),
    )
    pool = WorkerPool(
        config,
        make_record=lambda c, v, r: c.record(fingerprint, v, reference="native", portability="", tags=(), reason=r),
        size=1,
    )
    seen = []
    pool.run([_cell("faulty_segfault"), _cell("faulty_fine")], lambda o: seen.append(pool.workers[0].cpus))
    assert seen == [[core], [core]]  # the worker that replaced the crashed one is pinned to the same core
