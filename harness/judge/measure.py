"""Latency and peak memory that can be trusted: blocks of a minimum duration, median, IQR, noise flag."""

from __future__ import annotations

import ctypes
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from harness.record import Peak, Timing

NOISY_IQR_FRACTION = 0.10


@dataclass
class Measurement:
    """Per-call times from blocks of `number` calls each; computes its own statistics."""

    times: List[float]
    number: int
    threads: int

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def iqr(self) -> float:
        if len(self.times) < 4:
            return max(self.times) - min(self.times)
        q1, _, q3 = statistics.quantiles(self.times, n=4, method="inclusive")
        return q3 - q1

    @property
    def noisy(self) -> bool:
        return self.median > 0 and self.iqr > NOISY_IQR_FRACTION * self.median

    def timing(self) -> Timing:
        return Timing(self.median, self.iqr, len(self.times), self.threads, self.noisy, self.number)


def time_callable(
    fn: Callable[[], Any],
    *,
    threads: int,
    min_block_s: float = 0.005,
    budget_s: float = 0.25,
    warmup: int = 2,
    min_samples: int = 5,
    max_samples: int = 100,
    sync: Optional[Callable[[], None]] = None,
    timer: Callable[[], float] = time.perf_counter,
) -> Measurement:
    """Time `fn` after warm-up: calibrate a block size, then sample blocks until the budget is spent.

    `sync` runs after each block and inside the timed region (a CUDA synchronise); `timer` is a seam
    for tests.
    """
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    number = 1
    while True:
        elapsed = _block(fn, number, sync, timer)
        if elapsed >= min_block_s or number >= 1 << 20:
            break
        number *= 2 if elapsed <= 0 else max(2, min(10, int(min_block_s / elapsed) + 1))
    times = [elapsed / number]
    spent = elapsed
    while len(times) < max_samples and (len(times) < min_samples or spent < budget_s):
        elapsed = _block(fn, number, sync, timer)
        times.append(elapsed / number)
        spent += elapsed
    return Measurement(times=times, number=number, threads=threads)


def _block(fn: Callable[[], Any], number: int, sync: Optional[Callable[[], None]], timer: Callable[[], float]) -> float:
    start = timer()
    for _ in range(number):
        fn()
    if sync:
        sync()
    return timer() - start


# Peak memory ----------------------------------------------------------------------------------------

RSS_METHOD = "rss-hwm-clear_refs"


def _status_kib(key: str) -> Optional[int]:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _trim_heap() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def peak_rss_of(fn: Callable[[], Any]) -> Peak:
    """Resident-set growth of one call: reset the high-water mark to the current RSS, call, read it back.

    Freed heap is returned to the OS first (malloc_trim), so the call's own allocations raise the mark.
    """
    _trim_heap()
    if not _reset_hwm():
        return Peak(None, "unavailable: no resettable high-water mark (Linux's /proc/self/clear_refs) here")
    before = _status_kib("VmRSS")
    fn()
    hwm = _status_kib("VmHWM")
    if before is None or hwm is None:
        return Peak(None, "unavailable: /proc/self/status unreadable")
    return Peak(max(0, hwm - before) * 1024, RSS_METHOD)


FOOTPRINT_METHOD = "rss-hwm: from before the session is created through its first run"
WORKING_SET_METHOD = "rss-hwm: one run with the arena off, after a warm-up run"
# The same, in a process forked from a fresh runtime (harness.judge.zygote): as a deployer's process has them
FRESH = "rss-hwm in a process forked from a fresh runtime: "
FRESH_FOOTPRINT_METHOD = FRESH + "from before the session is created through its first run"
FRESH_WORKING_SET_METHOD = FRESH + "one run with the arena off, after a warm-up run"


class Footprint:
    """A session's footprint: the resident-set high-water mark's growth from before the session is created (heap
    trimmed, mark reset) to the end of its first run: its weights, arena and plans, and the run's own buffers."""

    def __init__(self) -> None:
        _trim_heap()
        self.reset = _reset_hwm()
        self.before = _status_kib("VmRSS")

    def peak(self, method: str = FOOTPRINT_METHOD) -> Peak:
        hwm = _status_kib("VmHWM")
        if not self.reset:
            return Peak(None, "unavailable: no resettable high-water mark (Linux's /proc/self/clear_refs) here")
        if self.before is None or hwm is None:
            return Peak(None, "unavailable: /proc/self/status unreadable")
        return Peak(max(0, hwm - self.before) * 1024, method)


def working_set_of(fn: Callable[[], Any], method: str = WORKING_SET_METHOD) -> Peak:
    """One call's own resident-set growth, after one warm-up call (so only what the call allocates and frees)."""
    fn()
    peak = peak_rss_of(fn)
    return Peak(peak.peak_bytes, method if peak.peak_bytes is not None else peak.method)


def peak_cuda_of(fn: Callable[[], Any], torch: Any) -> Peak:
    """torch's peak allocation during one call above what was allocated before it."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return Peak(max(0, torch.cuda.max_memory_allocated() - base), "torch-cuda-max-allocated")


def set_threads(threads: int) -> None:
    os.environ["OMP_NUM_THREADS"] = str(threads)
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        pass
