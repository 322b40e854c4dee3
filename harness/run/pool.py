"""The worker pool of a run's parent: a worker that segfaults, aborts or hangs costs its cell, never the run.

Portable (Linux, macOS, Windows): each worker's answers are read by a thread of their own into one inbox the pool
waits on, as select() on pipes is POSIX-only; a worker is killed with its process group on POSIX, alone on Windows.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Protocol, Sequence, Tuple

from harness.cli import artifacts_dir, pinned_cpus
from harness.record import CellRecord, RecordError, Verdict
from harness.worker.options import Options

REPO_ROOT = Path(__file__).resolve().parents[2]
WINDOWS = sys.platform == "win32"

# Windows reports a crash as the exception's NTSTATUS for an exit code; abort() exits with 3.
_NTSTATUS = {
    0xC0000005: "an access violation",
    0xC000001D: "an illegal instruction",
    0xC0000094: "an integer division by zero",
    0xC00000FD: "a stack overflow",
    0xC0000409: "a fail-fast abort (stack buffer overrun or abort())",
}


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_run_id() -> str:
    """A run's id in its records: when it started, and four random hex digits."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:4]


class Job(Protocol):
    """What a worker is sent: a cell to export and judge (CellSpec), or a stored graph to replay (ReplayJob)."""

    @property
    def cell_id(self) -> str: ...

    def to_dict(self) -> Dict[str, Any]: ...


@dataclass
class WorkerConfig:
    env_name: str
    options: Options = field(default_factory=Options)
    cases_dirs: Sequence[str] = ()
    memory_limit_mb: Optional[int] = None
    timeout_s: float = 300.0
    log_path: Optional[Path] = None
    module: str = "harness.worker"  # the worker's entry point: harness.replay.worker in a runtime environment
    extra: Sequence[str] = ()  # that entry point's own arguments
    cpus: Sequence[int] = ()  # pin the i-th worker to cpus[i] (one worker per core, timing undisturbed by the others)

    @classmethod
    def from_args(cls, args: argparse.Namespace, env_name: str, log_path: Path) -> WorkerConfig:
        return cls(
            env_name=env_name,
            options=Options(
                threads=args.threads,
                latency=not args.no_latency,
                memory=not args.no_memory,
                latency_budget_s=args.latency_budget,
                tensorrt=args.tensorrt,
                artifacts_dir=None if args.no_artifacts else str(artifacts_dir(args).resolve()),
            ),
            cases_dirs=tuple(args.cases_dir),
            memory_limit_mb=args.memory_limit_mb,
            timeout_s=args.timeout,
            log_path=log_path,
            cpus=pinned_cpus(args),
        )

    def command(self, cpu: Optional[int] = None) -> List[str]:
        cmd = [
            sys.executable,
            "-m",
            self.module,
            "--env",
            self.env_name,
            "--options",
            self.options.to_json(),
            *self.extra,
        ]
        for d in self.cases_dirs:
            cmd += ["--cases-dir", str(d)]
        if self.memory_limit_mb:
            cmd += ["--memory-limit-mb", str(self.memory_limit_mb)]
        if cpu is not None:
            cmd += ["--cpu", str(cpu)]
        return cmd


if TYPE_CHECKING:  # where every worker's lines arrive: (worker, line), then (worker, None) at its end
    Inbox = queue.Queue[Tuple["Worker", Optional[bytes]]]


class Worker:
    """One worker process; a thread reads its answers, a line at a time, into the pool's inbox (None at its end)."""

    def __init__(self, config: WorkerConfig, inbox: Inbox, cpu: Optional[int] = None) -> None:
        self.cpu = cpu
        environ = dict(os.environ)
        environ["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in [environ.get("PYTHONPATH")] if p])
        environ.setdefault("OMP_NUM_THREADS", str(config.options.threads))
        self._log = open(config.log_path, "ab") if config.log_path else subprocess.DEVNULL
        # Its own process group: a Ctrl+C at the terminal reaches the parent alone, which decides what stops.
        group = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if WINDOWS else {"start_new_session": True}
        self.proc = subprocess.Popen(
            config.command(cpu),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=environ,
            **group,  # type: ignore[call-overload]
        )
        self.cell: Optional[Job] = None
        self.started = 0.0
        self.ready = False
        self.cpus: Optional[List[int]] = None  # the cores the worker says it may run on
        threading.Thread(target=self._read, args=(inbox,), name=f"worker-{self.proc.pid}", daemon=True).start()

    def _read(self, inbox: Inbox) -> None:
        stream = self.proc.stdout
        try:
            for line in stream:
                if line.strip():
                    inbox.put((self, line))
        except (OSError, ValueError):  # the stream went away under us: the same as its end
            pass
        finally:
            inbox.put((self, None))
            stream.close()

    def send(self, cell: Job) -> None:
        self.cell = cell
        self.started = time.monotonic()
        line = json.dumps({"cell_id": cell.cell_id, "cell": cell.to_dict()}) + "\n"
        self.proc.stdin.write(line.encode())
        self.proc.stdin.flush()

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                if WINDOWS:
                    self.proc.kill()  # TerminateProcess
                else:
                    os.killpg(self.proc.pid, signal.SIGKILL)  # with anything it started
            except (ProcessLookupError, PermissionError):  # it is gone already
                pass
        self.proc.wait()
        self.close()

    def close(self) -> None:
        """Its stdin and log; its stdout belongs to the reading thread, which closes it at the end."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        if self._log is not subprocess.DEVNULL:
            self._log.close()

    def death(self) -> str:
        return describe_exit(self.proc.wait())


def describe_exit(code: int) -> str:
    """A dead worker's exit status in words: the signal on POSIX, the exception's NTSTATUS on Windows."""
    if code < 0:
        try:
            return f"worker killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"worker killed by signal {-code}"
    status = code & 0xFFFFFFFF
    if status in _NTSTATUS:
        return f"worker died of {_NTSTATUS[status]} (exit status {status:#010x})"
    if status >= 0xC0000000:
        return f"worker died of a Windows exception (exit status {status:#010x})"
    return f"worker exited with code {code}"


@dataclass(frozen=True)
class Outcome:
    """A job's record as its worker (or the pool, for a crash or a timeout) gave it, before the run stamps it."""

    cell: Job
    record: CellRecord
    started_at: str
    wall_s: float


MakeRecord = Callable[[Job, Verdict, Optional[str]], CellRecord]


@dataclass
class WorkerPool:
    """`size` workers; a worker that dies or overruns is replaced and its cell gets its verdict."""

    config: WorkerConfig
    make_record: MakeRecord
    size: int = 1
    workers: List[Worker] = field(default_factory=list)
    inbox: Inbox = field(default_factory=queue.Queue)

    def run(
        self,
        cells: Iterable[Job],
        on_outcome: Callable[[Outcome], None],
        on_start: Callable[[Job], None] = lambda c: None,
    ) -> None:
        queue = list(cells)
        queue.reverse()
        self.workers = [Worker(self.config, self.inbox, self._cpu(i)) for i in range(min(self.size, len(queue)))]
        try:
            while queue or any(w.cell for w in self.workers):
                for w in list(self.workers):
                    if w.ready and w.cell is None and queue:
                        cell = queue.pop()
                        on_start(cell)
                        try:
                            w.send(cell)
                        except (BrokenPipeError, OSError):  # it died after its last answer: retry elsewhere
                            w.cell = None
                            queue.append(cell)
                            w.kill()
                            self.workers[self.workers.index(w)] = Worker(self.config, self.inbox, w.cpu)
                self._wait(on_outcome)
        finally:
            for w in self.workers:
                w.kill()

    def _cpu(self, index: int) -> Optional[int]:
        cpus = self.config.cpus
        return cpus[index % len(cpus)] if cpus else None

    def _wait(self, on_outcome: Callable[[Outcome], None]) -> None:
        now = time.monotonic()
        busy = [w for w in self.workers if w.cell]
        timeout = min([w.started + self.config.timeout_s - now for w in busy] + [1.0])
        for w, line in self._received_lines(max(0.0, timeout)):
            if not any(w is current for current in self.workers):  # from a worker already killed and replaced
                continue
            if line is None:
                self._replace(w, on_outcome, Verdict.CRASHED, w.death())
                continue
            msg = json.loads(line)
            if msg.get("ready"):
                w.ready, w.cpus = True, msg.get("cpus")
            elif w.cell is not None and msg.get("cell_id") == w.cell.cell_id:
                on_outcome(self._outcome(w, self._received(w.cell, msg.get("record"))))
                w.cell = None
        now = time.monotonic()
        for w in list(self.workers):
            if w.cell and now - w.started > self.config.timeout_s:
                w.kill()
                self._replace(
                    w, on_outcome, Verdict.TIMEOUT, f"the cell ran past the {self.config.timeout_s:g} s limit"
                )

    def _received_lines(self, timeout: float) -> List[Tuple[Worker, Optional[bytes]]]:
        """What the workers said: the first line within `timeout` seconds, and every line already behind it."""
        try:
            lines = [self.inbox.get(timeout=timeout)]
        except queue.Empty:
            return []
        while True:
            try:
                lines.append(self.inbox.get_nowait())
            except queue.Empty:
                return lines

    def _received(self, cell: Job, data: Any) -> CellRecord:
        """The worker's record; one that does not read back is our bug, recorded as such for its cell."""
        try:
            return CellRecord.from_json(data)
        except RecordError as exc:
            return self.make_record(cell, Verdict.HARNESS_ERROR, f"the worker's record does not read back: {exc}")

    def _outcome(self, w: Worker, record: CellRecord) -> Outcome:
        wall = time.monotonic() - w.started
        started = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=wall)
        return Outcome(w.cell, record, started.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), wall)

    def _replace(self, w: Worker, on_outcome: Callable[[Outcome], None], verdict: Verdict, reason: str) -> None:
        if w.cell is None and not w.ready:
            w.kill()
            raise RuntimeError(f"a worker could not start ({w.death()}); see the worker log {self.config.log_path}")
        if w.cell is not None:
            on_outcome(self._outcome(w, self.make_record(w.cell, verdict, reason)))
        w.kill()
        self.workers[self.workers.index(w)] = Worker(self.config, self.inbox, w.cpu)
