"""The record of one cell, shared by the runner and the reporter: its type, its words, and the one reader.

Torch-free: the reporter and replay sides import it without torch.
"""

from __future__ import annotations

from harness.record.cell import (
    WORKING_SET,
    CellRecord,
    ExportInfo,
    Parity,
    Peak,
    RecordError,
    Runtime,
    Stage,
    Timing,
)
from harness.record.divergence import Divergence
from harness.record.fingerprint import FINGERPRINT_KEYS, Fingerprint
from harness.record.installed import (
    EnvInfo,
    cpu_name,
    default_env_name,
    dist_version,
    installed_packages,
    requirement_name,
    satisfied,
    torch_free_fingerprint,
)
from harness.record.reader import Refusal, ResultsFile, SkippedLine, read_results, set_aside_torn_lines
from harness.record.terms import (
    PORTABILITY_LABELS,
    PORTABILITY_SHORT,
    SCHEMA_VERSION,
    Portability,
    RecordKind,
    Verdict,
    canonical_params,
    clean,
    job_id,
    ladder_key,
    parse_version,
    platform_tag,
    portability_label,
    portability_rank,
    portability_short,
    split_job_id,
)

__all__ = [
    "FINGERPRINT_KEYS",
    "WORKING_SET",
    "PORTABILITY_LABELS",
    "PORTABILITY_SHORT",
    "SCHEMA_VERSION",
    "CellRecord",
    "Divergence",
    "EnvInfo",
    "ExportInfo",
    "Fingerprint",
    "Parity",
    "Peak",
    "Portability",
    "RecordError",
    "RecordKind",
    "Refusal",
    "ResultsFile",
    "Runtime",
    "SkippedLine",
    "Stage",
    "Timing",
    "Verdict",
    "canonical_params",
    "clean",
    "job_id",
    "cpu_name",
    "default_env_name",
    "dist_version",
    "installed_packages",
    "ladder_key",
    "parse_version",
    "platform_tag",
    "portability_label",
    "split_job_id",
    "portability_rank",
    "portability_short",
    "read_results",
    "requirement_name",
    "satisfied",
    "set_aside_torn_lines",
    "torch_free_fingerprint",
]
