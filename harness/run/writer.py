"""Results as JSON Lines: one self-describing record per cell, appended whole; what a resumed run may keep."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Optional, Sequence, Tuple

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


def resume_key(cell_id: str, fingerprint_hash: str, harness_version: str, code: str = "") -> Tuple[str, str, str]:
    return (cell_id, fingerprint_hash, f"{harness_version}+{code}")


# What a cell's result depends on besides its spec and environment: the harness code that measures it and
# the case files. The page and bench-op are left out, so editing them keeps every record.
_NOT_MEASURING = ("report", "bench", "host", "replay", "progress.py", "__pycache__")


# What a replay's result depends on: the code that judges a stored graph, not the code that exports one.
REPLAY_CODE = (
    "replay",
    "judge",
    "artifacts",
    "record",
    "worker/options.py",
    "worker/loop.py",
    "worker/fingerprint.py",
)


def code_hash(cases_dirs: Sequence[str] = (), only: Optional[Sequence[str]] = None) -> str:
    """A short hash of the harness sources that measure cells and of every case file in use; with `only`, of those
    parts of the harness alone (folders or files, relative to the package)."""
    package = Path(__file__).resolve().parents[1]
    files = [f for f in sorted(package.rglob("*.py")) if "__pycache__" not in f.parts]
    if only is not None:
        files = [f for f in files if any(f.relative_to(package).as_posix().startswith(part) for part in only)]
    else:
        files = [f for f in files if not set(f.relative_to(package).parts) & set(_NOT_MEASURING)]
        for folder in [package.parent / "cases", *map(Path, cases_dirs)]:
            files.extend(sorted(Path(folder).glob("*.py")))
    digest = hashlib.sha256()
    for f in files:
        if f.is_file():
            digest.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()[:12]
