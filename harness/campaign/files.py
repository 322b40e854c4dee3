"""The results files' names, in one place: the commands write them, the noxfile, CI's checks and the benchmark
scripts find them by these names.

    results/<env>.jsonl               an export environment's cells (torch2@linux_aarch64 off linux_x86_64)
    results/replay-<runtime>.jsonl    one runtime environment's judgements of the stored graphs
    results/convert.jsonl             the converter's result for each stored graph and precision, and the recipe
                                      searches' answers
    results/trace-<runtime>.jsonl     a trusted runtime's intermediates stored for the divergences (harness diverge)
    results/diverge-<runtime>.jsonl   where each mismatch in that runtime first parts from a trusted run
    ....shard-I-of-N.jsonl            one machine's slice of any of these (--shard I/N)
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Optional, Tuple

from harness.record import RecordKind

SUFFIX = ".jsonl"
REPLAY_PREFIX = "replay-"
CONVERT_STEM = "convert"
PREFIXES = {RecordKind.REPLAY: REPLAY_PREFIX, RecordKind.TRACE: "trace-", RecordKind.DIVERGENCE: "diverge-"}
WORKER_LOG_SUFFIX = ".worker.log"


def results_stem(kind: RecordKind, name: str = "") -> str:
    """The file name without its suffix: the environment's name, `replay-<runtime>` (`trace-`, `diverge-`), or
    `convert`."""
    if kind in PREFIXES:
        return PREFIXES[kind] + name
    if kind in (RecordKind.CONVERSION, RecordKind.SEARCH):
        return CONVERT_STEM
    return name


def results_name(kind: RecordKind, name: str = "", shard: Optional[Tuple[int, int]] = None) -> str:
    part = f".shard-{shard[0]}-of-{shard[1]}" if shard else ""
    return results_stem(kind, name) + part + SUFFIX


def results_path(
    args: argparse.Namespace, kind: RecordKind, name: str = "", shard: Optional[Tuple[int, int]] = None
) -> Path:
    """--out, else the kind's file under --results-dir."""
    return Path(args.out) if args.out else Path(args.results_dir) / results_name(kind, name, shard)


def worker_log(results: Path) -> Path:
    return results.with_suffix(WORKER_LOG_SUFFIX)


def kind_of_file(path: Path) -> Tuple[RecordKind, str]:
    """What a results file holds by its name, and whose: (REPLAY, "ort1.14"), (EXPORT, "torch1.8")."""
    stem = Path(path).name.split(".shard-")[0]
    stem = stem[: -len(SUFFIX)] if stem.endswith(SUFFIX) else stem
    for kind, prefix in PREFIXES.items():
        if stem.startswith(prefix):
            return kind, stem[len(prefix) :]
    if stem == CONVERT_STEM:
        return RecordKind.CONVERSION, ""
    return RecordKind.EXPORT, stem
