"""A progress line with the current cell and the time left, and the closing summary."""

from __future__ import annotations

import collections
import sys
import time
from typing import Dict, Optional, TextIO


class Progress:
    def __init__(
        self,
        total: int,
        env_name: str,
        quiet: bool = False,
        stream: Optional[TextIO] = None,
        resumed: int = 0,
        noun: str = "cell",
    ) -> None:
        self.total = total
        self.noun = noun
        self.resumed = resumed
        self.env_name = env_name
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.done = 0
        self.ran = 0
        self.run_seconds = 0.0
        self.verdicts: Dict[str, int] = collections.Counter()
        self.start = time.monotonic()
        self._last_line = 0.0

    def started(self, label: str) -> None:
        self._show(label)

    def finished(self, verdict: str, wall_s: float, ran: bool) -> None:
        self.done += 1
        self.verdicts[verdict] += 1
        if ran:
            self.ran += 1
            self.run_seconds += wall_s

    def eta(self) -> Optional[float]:
        if not self.ran:
            return None
        elapsed = time.monotonic() - self.start
        rate = elapsed / max(self.done, 1)
        return rate * (self.total - self.done)

    def _show(self, label: str) -> None:
        if self.quiet:
            return
        eta = self.eta()
        eta_txt = "--" if eta is None else _duration(eta)
        pct = 100.0 * self.done / max(self.total, 1)
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        line = f"[{bar}] {self.done}/{self.total} {pct:3.0f}% eta {eta_txt} {label}"
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(150))
            self.stream.flush()
        elif time.monotonic() - self._last_line > 10 or self.done == 0:
            self.stream.write(line[:200] + "\n")
            self._last_line = time.monotonic()

    def summary(self) -> str:
        passes = self.verdicts.get("pass", 0)
        failures = ", ".join(f"{k} {v}" for k, v in sorted(self.verdicts.items()) if k != "pass") or "none"
        wall = time.monotonic() - self.start
        resumed = f" ({self.resumed} already done, skipped)" if self.resumed else ""
        counts = f"{self.done} {plural(self.noun)}{resumed}, {passes} pass; others: {failures}"
        return f"{self.env_name}: {counts}; wall {_duration(wall)}"

    def close(self) -> None:
        if self.tty and not self.quiet:
            self.stream.write("\r" + " " * 150 + "\r")
            self.stream.flush()


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def plural(noun: str) -> str:
    """ "cells", "graphs", "recipe searches": what the progress line and the summaries count."""
    return noun + ("es" if noun.endswith(("s", "sh", "ch", "x")) else "s")
