"""The worker pool of a command's parent: a worker that segfaults, aborts or hangs costs its job, never the run.

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
from typing import IO, TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Protocol, Sequence, Tuple

from harness.campaign.flags import artifacts_dir, pinned_cpus
from harness.campaign.options import Options
from harness.record import CellRecord, RecordError, Verdict

REPO_ROOT = Path(__file__).resolve().parents[2]
WINDOWS = sys.platform == "win32"

# Windows reports a crash as the exception's NTSTATUS for an exit code (abort() in a release build: 0xC0000409).
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
    """What a worker is sent: a cell to export and judge (CellSpec), a stored graph to replay or to convert."""

    @property
    def cell_id(self) -> str: ...

    def to_dict(self) -> Dict[str, Any]: ...

    def label(self) -> str: ...


@dataclass
class WorkerConfig:
    env_name: str
    options: Options = field(default_factory=Options)
    cases_dirs: Sequence[str] = ()
    memory_limit_mb: Optional[int] = None
    timeout_s: float = 300.0
    log_path: Optional[Path] = None
    module: str = "harness.worker"  # the worker's entry point: harness.replay.worker, harness.artifacts.worker
    extra: Sequence[str] = ()  # that entry point's own arguments
    cpus: Sequence[int] = ()  # pin the i-th worker to cpus[i] (one worker per core, timing undisturbed by the others)
    python: str = ""  # the workers' interpreter: another venv's (a case's requirements); this one by default

    @classmethod
    def from_args(cls, args: argparse.Namespace, env_name: str, log_path: Path, **where: Any) -> WorkerConfig:
        """The shared worker flags (harness.campaign.flags.WORKERS) as a config; `where` sets the entry point."""
        keep = not getattr(args, "no_artifacts", False)
        return cls(
            env_name=env_name,
            options=Options(
                threads=getattr(args, "threads", 1),
                latency=not getattr(args, "no_latency", True),
                memory=not getattr(args, "no_memory", True),
                latency_budget_s=getattr(args, "latency_budget", 0.0),
                tensorrt=getattr(args, "tensorrt", False),
                cost_sweeps=getattr(args, "cost_sweeps", False),
                artifacts_dir=str(artifacts_dir(args).resolve()) if keep else None,
            ),
            memory_limit_mb=args.memory_limit_mb,
            timeout_s=args.timeout,
            log_path=log_path,
            cpus=pinned_cpus(args),
            **where,
        )

    def command(self, cpu: Optional[int] = None) -> List[str]:
        cmd = [
            self.python or sys.executable,
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


class WorkerLog:
    """The workers' stderr, copied a line at a time into one file by the parent.

    Whole lines from every worker, on every platform: a child appending to an inherited file handle would overwrite
    another's lines on Windows, where appending is emulated by seeking to the end before each write.
    """

    def __init__(self, path: Optional[Path]) -> None:
        self.path = path
        self._file = open(path, "ab") if path else None
        self._lock = threading.Lock()

    def copy(self, stream: IO[bytes]) -> None:
        """A worker's stderr until it closes (the worker's end); run on a thread of its own."""
        try:
            for line in stream:
                self.write(line)
        except (OSError, ValueError):  # the stream went away under us: the same as its end
            pass
        finally:
            stream.close()

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._file is not None and not self._file.closed:
                self._file.write(data)
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()


class Worker:
    """One worker process; a thread reads its answers, a line at a time, into the pool's inbox (None at its end),
    another copies its stderr into the pool's log."""

    def __init__(self, config: WorkerConfig, inbox: Inbox, log: WorkerLog, cpu: Optional[int] = None) -> None:
        self.cpu = cpu
        environ = dict(os.environ)
        environ["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in [environ.get("PYTHONPATH")] if p])
        environ.setdefault("OMP_NUM_THREADS", str(config.options.threads))
        # Its own process group: a Ctrl+C at the terminal reaches the parent alone, which decides what stops.
        group = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if WINDOWS else {"start_new_session": True}
        self.proc = subprocess.Popen(
            config.command(cpu),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if log.path else subprocess.DEVNULL,
            env=environ,
            **group,  # type: ignore[call-overload]
        )
        self.cell: Optional[Job] = None
        self.started = 0.0
        self.ready = False
        self.cpus: Optional[List[int]] = None  # the cores the worker says it may run on
        name = f"worker-{self.proc.pid}"
        threading.Thread(target=self._read, args=(inbox,), name=name, daemon=True).start()
        self._copying = None
        if log.path:
            self._copying = threading.Thread(target=log.copy, args=(self.proc.stderr,), name=name + "-log", daemon=True)
            self._copying.start()

    def _read(self, inbox: Inbox) -> None:
        stream = self.proc.stdout
        try:
            for line in stream:
                if line.endswith(b"\n") and line.strip():  # a worker that died mid-line left no answer
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
        try:
            self.proc.stdin.close()  # stdout and stderr belong to the threads reading them, which close them
        except OSError:
            pass
        if self._copying is not None:  # what it wrote before it died is in the log before anyone points there
            self._copying.join(timeout=5)

    def death(self) -> str:
        return describe_exit(self.proc.wait())


def _message(line: bytes) -> Optional[Dict[str, Any]]:
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None


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
    log: Optional[WorkerLog] = None

    def run(
        self,
        cells: Iterable[Job],
        on_outcome: Callable[[Outcome], None],
        on_start: Callable[[Job], None] = lambda c: None,
    ) -> None:
        waiting = list(cells)
        waiting.reverse()
        self.log = WorkerLog(self.config.log_path)
        try:
            self.workers = [self._start(self._cpu(i)) for i in range(min(self.size, len(waiting)))]
            while waiting or any(w.cell for w in self.workers):
                for w in list(self.workers):
                    if w.ready and w.cell is None and waiting:
                        cell = waiting.pop()
                        on_start(cell)
                        try:
                            w.send(cell)
                        except (BrokenPipeError, OSError):  # it died after its last answer: retry elsewhere
                            w.cell = None
                            waiting.append(cell)
                            w.kill()
                            self.workers[self.workers.index(w)] = self._start(w.cpu)
                self._wait(on_outcome)
        finally:
            for w in self.workers:
                w.kill()
            self.log.close()

    def _start(self, cpu: Optional[int]) -> Worker:
        assert self.log is not None, "workers start inside run()"
        return Worker(self.config, self.inbox, self.log, cpu)

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
            msg = _message(line)
            if msg is None:  # our bug: the worker's protocol is JSON lines alone
                reason = f"the worker's answer does not read as JSON: {line[:160]!r}"
                self._replace(w, on_outcome, Verdict.HARNESS_ERROR, reason)
                continue
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
        self.workers[self.workers.index(w)] = self._start(w.cpu)
