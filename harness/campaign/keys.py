"""When a job is done, and which machine's shard it falls in: the one resume key of every kind of job, the
harness-error rule, the shard test and the hash of the code a job's result depends on."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Set, Tuple

from harness import __version__
from harness.errors import UserError
from harness.record import CellRecord, Verdict, read_results

Key = Tuple[str, Any, str]


def resume_key(job_id: str, depends_on: Any, harness_version: str = __version__, code: str = "") -> Key:
    """A job's identity, what its result depends on (an environment's fingerprint, a stored graph and the runtime
    judging it), and the harness code that measures it: while all three are unchanged, its record stands."""
    return (job_id, depends_on, f"{harness_version}+{code}")


def done_keys(path: Path, key_of: Callable[[CellRecord], Optional[Key]]) -> Set[Key]:
    """The keys of the records already in a results file. A harness error (a bug of ours) is never done; nor is a
    record `key_of` gives no key (its graph lost, say)."""
    if not path.exists():
        return set()
    found = read_results(path)
    if found.refusal is not None:
        raise UserError(f"{found.refusal.line()}; or pass --out to write elsewhere")
    keys = (key_of(r) for r in found.records if r.verdict != Verdict.HARNESS_ERROR)
    return {k for k in keys if k is not None}


def parse_shard(text: Optional[str]) -> Optional[Tuple[int, int]]:
    if not text:
        return None
    try:
        index, count = (int(x) for x in text.split("/"))
    except ValueError:
        raise UserError(f"--shard {text}: expected I/N with 1 <= I <= N, for example --shard 2/4") from None
    if not 1 <= index <= count:
        raise UserError(f"--shard {text}: expected I/N with 1 <= I <= N, for example --shard 2/4")
    return index, count


def in_shard(hex_id: str, shard: Optional[Tuple[int, int]]) -> bool:
    """Deterministic split by a cell's own id (a replay's and a conversion's: their exporting cell's), so every
    machine agrees without talking, and a cell's replays land on the shard that exported it."""
    if shard is None:
        return True
    index, count = shard
    return int(hex_id, 16) % count == index - 1


# What a cell's result depends on besides its spec and environment: the harness code that measures it and
# the case files. The page, bench-op, the host side, the replay and the divergences are left out, so editing them
# keeps every exported cell (artifacts/ stays in: the worker stores each cell's graph through it).
_NOT_MEASURING = ("report", "bench", "host", "replay", "diverge", "progress.py", "__pycache__")

# What a replay's (and a conversion's) result depends on: the code that judges or converts a stored graph, not
# the code that exports one.
REPLAY_CODE = (
    "replay",
    "judge",
    "artifacts",
    "record",
    "campaign/options.py",
    "campaign/serve.py",
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
