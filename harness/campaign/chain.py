"""One campaign: a command's jobs, once it knows them, worked through by the steps every kind shares.

    a command's own tasks (load -> discover -> expand) -> its Kind -> drop_done -> open_results -> decide
    -> share -> execute -> summarise

Tasks are chained like nox's: each takes what the previous one returned, and an int ends the chain as the exit
code. A kind (an export, a replay, a conversion) says only what is its own: its jobs, a job's id and key, its
blank record, where its workers run and its summary lines.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from harness import __version__
from harness.campaign.keys import Key, done_keys
from harness.campaign.pool import Job, Outcome, WorkerConfig, WorkerPool, new_run_id, now_iso
from harness.campaign.progress import Progress, plural
from harness.campaign.writer import ResultsWriter
from harness.errors import ExitCode
from harness.record import CellRecord, Verdict, set_aside_torn_lines


def pipeline(value: Any, tasks: Sequence[Callable[[Any], Any]]) -> int:
    """Each task on what the one before returned; the first to return an int ends the chain with it."""
    for task in tasks:
        value = task(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return ExitCode.OK


@dataclass
class Kind:
    """What one kind of job is: the base of ExportKind, ReplayKind and ConversionKind.

    `jobs` are the selected jobs of this machine's shard, `out` the results file, `name` the environment the
    progress line names, `code` the hash of the harness code the jobs' results depend on.
    """

    args: argparse.Namespace
    jobs: List[Job]
    out: Path
    name: str
    code: str
    noun = "job"  # as the summary counts them: cell, graph, conversion

    def key(self, job: Job) -> Key:
        """The resume key of a job to do (harness.campaign.keys.resume_key)."""
        raise NotImplementedError

    def record_key(self, record: CellRecord) -> Optional[Key]:
        """The resume key of a record already written; None when its job must run again all the same."""
        raise NotImplementedError

    def blank(self, job: Job, verdict: Verdict, reason: Optional[str]) -> CellRecord:
        """A job's record before any stage: for the jobs no worker answers (decided, crashed, timed out)."""
        raise NotImplementedError

    def worker(self) -> WorkerConfig:
        """Where the jobs run: the worker's entry point and its options."""
        raise NotImplementedError

    def worker_groups(self, jobs: List[Job]) -> List[Tuple[WorkerConfig, List[Job]]]:
        """The jobs by where they run: one pool each, one after the other (an export's cases that need a venv of
        their own); all in `worker()` by default."""
        return [(self.worker(), jobs)]

    def twin_key(self, job: Job) -> Optional[str]:
        """What the job's answer depends on and nothing else, or None: jobs with one key are run once (`share`).
        None by default: every job runs."""
        return None

    def as_twin(self, job: Job, answer: CellRecord, first: Job) -> CellRecord:
        """`job`'s record from the answer its twin `first` got: what `first`'s worker measured, over `job`'s own
        blank (its identity), naming `first` as the job judged with."""
        mine = self.blank(job, answer.verdict, answer.reason)
        theirs = self.blank(first, answer.verdict, answer.reason)
        measured = {
            f.name: getattr(answer, f.name)
            for f in fields(CellRecord)
            if getattr(answer, f.name) != getattr(theirs, f.name)
        }
        return mine.with_(**measured, judged_with=first.cell_id)

    def decided(self, job: Job) -> Optional[Tuple[Verdict, str]]:
        """A verdict known before any work (not applicable, with its reason), or None: the job runs."""
        return None

    def stamp(self) -> Dict[str, Any]:
        """Fields every record this campaign writes carries besides the run's stamp."""
        return {}

    def announce(self, resumed: int, todo: int) -> str:
        return f"{self.name}: {len(self.jobs)} {plural(self.noun)}, {resumed} already in {self.out}, {todo} to run"

    def summary(self) -> List[str]:
        """Lines after the counts: what this kind has to add (limits, stored graphs)."""
        return []


@dataclass
class Campaign:
    """What the shared steps learn, in the order they learn it."""

    kind: Kind
    todo: List[Job] = field(default_factory=list)
    runnable: List[Job] = field(default_factory=list)
    resumed: int = 0
    run_id: str = ""
    writer: Optional[ResultsWriter] = None
    progress: Optional[Progress] = None
    harness_errors: int = 0
    interrupted: bool = False
    twins: Dict[Any, List[Job]] = field(default_factory=dict)  # a job run, and the jobs its answer stands for


def conduct(kind: Kind) -> int:
    """The shared steps on one kind's jobs; the exit code."""
    return pipeline(Campaign(kind), CAMPAIGN_STEPS)


def drop_done(c: Campaign) -> Campaign:
    """Jobs already done with this key (job, what it depends on, code) are kept, not run again."""
    kind = c.kind
    moved, aside = set_aside_torn_lines(kind.out)
    if moved:
        print(
            f"{kind.out}: {moved} torn line(s) moved to {aside}; their {plural(kind.noun)} run again", file=sys.stderr
        )
    done = set() if kind.args.rerun else done_keys(kind.out, kind.record_key)
    c.todo = [j for j in kind.jobs if kind.key(j) not in done]
    c.resumed = len(kind.jobs) - len(c.todo)
    return c


def open_results(c: Campaign) -> Campaign:
    kind = c.kind
    c.run_id = new_run_id()
    if not kind.args.quiet:
        print(kind.announce(c.resumed, len(c.todo)), file=sys.stderr)
    c.writer = ResultsWriter(kind.out)
    c.progress = Progress(len(c.todo), kind.name, quiet=kind.args.quiet, resumed=c.resumed, noun=kind.noun)
    return c


def decide(c: Campaign) -> Campaign:
    """Record the jobs whose verdict is known before any work; keep the rest to execute."""
    for job in c.todo:
        known = c.kind.decided(job)
        if known is None:
            c.runnable.append(job)
        else:
            write_outcome(c, Outcome(job, c.kind.blank(job, *known), now_iso(), 0.0), ran=False)
    return c


def share(c: Campaign) -> Campaign:
    """Of the runnable jobs with one twin key, the first runs and its answer is every twin's (Kind.as_twin): the
    same graph, inputs and tolerance on the same runtime would be measured again for nothing."""
    first_of: Dict[str, Job] = {}
    runnable: List[Job] = []
    for job in c.runnable:
        key = c.kind.twin_key(job)
        if key is not None and key in first_of:
            c.twins.setdefault(first_of[key], []).append(job)
            continue
        if key is not None:
            first_of[key] = job
        runnable.append(job)
    c.runnable = runnable
    return c


def execute(c: Campaign) -> Campaign:
    """Each runnable job in a worker process; every record written as it ends; Ctrl-C stops cleanly."""
    kind = c.kind
    try:
        for config, jobs in kind.worker_groups(c.runnable) if c.runnable else ():
            pool = WorkerPool(config, size=kind.args.jobs, make_record=kind.blank)
            pool.run(jobs, lambda o: write_answer(c, o), lambda j: c.progress.started(j.label()))
    except KeyboardInterrupt:
        c.interrupted = True
    finally:
        c.writer.close()
        c.progress.close()
    return c


def summarise(c: Campaign) -> int:
    """The counts and the kind's own lines; INTERRUPTED (saying how to resume), HARNESS_ERROR, or OK."""
    print(f"{c.progress.summary()}; results in {c.kind.out}", file=sys.stderr)
    for line in c.kind.summary():
        print(f"{c.kind.name}: {line}", file=sys.stderr)
    if c.interrupted:
        print(
            f"interrupted: every finished {c.kind.noun} is saved; run the same command again to resume", file=sys.stderr
        )
        return ExitCode.INTERRUPTED
    return ExitCode.HARNESS_ERROR if c.harness_errors else ExitCode.OK


CAMPAIGN_STEPS = (drop_done, open_results, decide, share, execute, summarise)


def write_answer(c: Campaign, outcome: Outcome) -> None:
    """A worker's answer, then its twins' records from it."""
    write_outcome(c, outcome)
    for twin in c.twins.pop(outcome.cell, ()):
        write_outcome(c, Outcome(twin, c.kind.as_twin(twin, outcome.record, outcome.cell), now_iso(), 0.0), ran=False)


def write_outcome(c: Campaign, outcome: Outcome, ran: bool = True) -> None:
    """One outcome as its record: stamped with the run, the code and the times, written at once, counted."""
    record = outcome.record.with_(
        run_id=c.run_id,
        code_hash=c.kind.code,
        harness_version=__version__,
        started_at=outcome.started_at,
        finished_at=now_iso(),
        wall_s=round(outcome.wall_s, 4),
        **c.kind.stamp(),
    )
    c.writer.write(record)
    c.progress.finished(record.verdict.value, outcome.wall_s, ran)
    c.harness_errors += record.verdict == Verdict.HARNESS_ERROR
