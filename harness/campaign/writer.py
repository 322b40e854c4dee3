"""Results as JSON Lines: one self-describing record per job, appended whole, fsynced, as each job ends."""

from __future__ import annotations

import os
from pathlib import Path

from harness.record import CellRecord


class ResultsWriter:
    """Appends one line per record with a single write on an O_APPEND descriptor, then fsyncs.

    A crash can lose the record being written, never corrupt an earlier one; a torn line (power loss, a full
    disk) is skipped and named by the reader, and set aside by the next run before it appends.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(str(self.path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if self.path.stat().st_size and not self._ends_with_newline():
            os.write(self._fd, b"\n")

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"

    def write(self, record: CellRecord) -> None:
        os.write(self._fd, (record.to_line() + "\n").encode("utf-8"))
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)
