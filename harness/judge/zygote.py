"""Measurements in a fresh process: a zygote forked once the runtime is imported and initialised (one tiny graph
run), before any graph is judged, and one child forked from it per measurement.

A worker that has judged hundreds of graphs has their kernels' code paged in and its heap's holes to fill: a
session created there grows the resident set by less than in a deployer's process, which loads its one model into
a fresh runtime. A child of the zygote starts from the fresh runtime every time. Linux and macOS (fork) only;
`Zygote.start` answers None elsewhere and the caller measures in its own process.
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import pickle
import signal
import struct
import sys
from typing import Any, Callable, List, Optional, Tuple

_IN_CHILD = False


def in_child() -> bool:
    """Whether this process is a zygote's child: what it measures, it measures as a fresh process would."""
    return _IN_CHILD


# A measurement that has not answered in this long has hung: its child is killed and the answer says so.
CHILD_TIMEOUT_S = 300


class ZygoteError(RuntimeError):
    """The measuring child died or hung; the message says how."""


class Zygote:
    """A fork server: `call(fn, *args)` runs fn(*args) in a child forked from the zygote and returns its result.
    fn must be a module-level function (sent by reference) and its arguments and result picklable."""

    def __init__(self, pid: int, requests: int, answers: int) -> None:
        self.pid, self._requests, self._answers = pid, requests, answers

    @classmethod
    def start(cls, ready: Callable[[], None]) -> Optional[Zygote]:
        """The zygote, after `ready()` has run in it (the runtime initialised); None where fork is not available."""
        if not hasattr(os, "fork") or sys.platform == "win32":
            return None
        from_worker, to_zygote = os.pipe()  # (read end, write end)
        from_zygote, to_worker = os.pipe()
        pid = os.fork()
        if pid == 0:  # the zygote
            os.close(to_zygote)
            os.close(from_zygote)
            code = 0
            try:
                ready()
                _serve(from_worker, to_worker, _resident_file_pages())
            except BaseException:
                code = 1
            os._exit(code)
        os.close(from_worker)
        os.close(to_worker)
        return cls(pid, to_zygote, from_zygote)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        _send(self._requests, (fn, args))
        ok, value = _receive(self._answers)
        if not ok:
            raise ZygoteError(value)
        return value

    def close(self) -> None:
        for fd in (self._requests, self._answers):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _serve(requests: int, answers: int, resident: List[Tuple[int, int]]) -> None:
    """The zygote's loop: each request measured in a child of its own, until the worker closes the pipe."""
    while True:
        try:
            fn, args = _receive(requests)
        except EOFError:
            return
        _send(answers, _in_child(fn, args, resident))


_EXITING: List[int] = []  # children that answered and are exiting, reaped by the zygote before its next fork


def _reap() -> None:
    while _EXITING:
        os.waitpid(_EXITING.pop(), 0)


def _in_child(fn: Callable[..., Any], args: Tuple[Any, ...], resident: List[Tuple[int, int]]) -> Tuple[bool, Any]:
    _reap()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        global _IN_CHILD
        _IN_CHILD = True
        faulthandler.disable()  # a crash here is the worker's to record (it judges the graph again itself)
        os.close(read_end)
        _populate(resident)
        try:
            answer: Tuple[bool, Any] = (True, fn(*args))
        except BaseException as exc:  # the measurement's own failure: its message goes back
            answer = (False, f"{type(exc).__name__}: {exc}")
        try:
            _send(write_end, answer)
        finally:
            os._exit(0)
    os.close(write_end)
    signal.signal(signal.SIGALRM, lambda *_: os.kill(pid, signal.SIGKILL))
    signal.alarm(CHILD_TIMEOUT_S)
    try:
        answer = _receive(read_end)
    except EOFError:
        answer = None
    finally:
        signal.alarm(0)
        os.close(read_end)
    if answer is not None:  # its exit (the kernel freeing its pages, 3 to 4 ms) is reaped with the next request's
        _EXITING.append(pid)
        return answer
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return False, f"the measuring process was killed by signal {os.WTERMSIG(status)}"
    return False, f"the measuring process exited with {os.WEXITSTATUS(status)} before answering"


# Linux's fork copies no page-table entries for a file mapping that has no private pages: a child faults the
# runtime's library pages in again, and would count them as its own growth. The zygote notes which file pages it
# has resident (/proc/self/pagemap's present bit) and each child maps them again before it measures.
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_MADV_POPULATE_READ = 22  # Linux 5.14+; older kernels: each page read once


def _resident_file_pages() -> List[Tuple[int, int]]:
    """(start, length) of the runs of resident pages of this process's file-backed mappings; [] off Linux."""
    try:
        with open("/proc/self/maps") as fh:
            maps = [line.split() for line in fh]
        pagemap = open("/proc/self/pagemap", "rb")
    except OSError:
        return []
    runs: List[Tuple[int, int]] = []
    with pagemap:
        for fields_ in maps:
            if len(fields_) < 6 or not fields_[5].startswith("/") or "r" not in fields_[1]:
                continue
            start, end = (int(x, 16) for x in fields_[0].split("-"))
            pagemap.seek(start // _PAGE * 8)
            entries = pagemap.read((end - start) // _PAGE * 8)
            run_start = None
            for i in range(len(entries) // 8):
                present = entries[i * 8 + 7] & 0x80
                if present and run_start is None:
                    run_start = i
                elif not present and run_start is not None:
                    runs.append((start + run_start * _PAGE, (i - run_start) * _PAGE))
                    run_start = None
            if run_start is not None:
                runs.append((start + run_start * _PAGE, end - start - run_start * _PAGE))
    return runs


def _populate(runs: List[Tuple[int, int]]) -> None:
    """The zygote's resident file pages mapped in this child too, as a fresh process that had run as far has them."""
    if not runs:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for start, length in runs:
        if libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(length), _MADV_POPULATE_READ) != 0:
            for address in range(start, start + length, _PAGE):
                ctypes.string_at(address, 1)


def _send(fd: int, value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    _write_all(fd, struct.pack("<Q", len(data)) + data)


def _receive(fd: int) -> Any:
    (size,) = struct.unpack("<Q", _read_exactly(fd, 8))
    return pickle.loads(_read_exactly(fd, size))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the other end closed the pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
