"""The record of one cell, shared by the runner and the reporter: its type, its words, and the one reader.

Torch-free: the reporter and replay sides import it without torch.
"""

from __future__ import annotations

from harness.record.cell import (
    FINGERPRINT_KEYS,
    WORKING_SET,
    CellRecord,
    ExportInfo,
    Fingerprint,
    Parity,
    Peak,
    RecordError,
    Runtime,
    Stage,
    Timing,
)
from harness.record.divergence import Divergence
from harness.record.installed import EnvInfo, cpu_name, default_env_name, dist_version, torch_free_fingerprint
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
    ladder_key,
    parse_version,
    platform_tag,
    portability_label,
    portability_rank,
    portability_short,
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
    "cpu_name",
    "default_env_name",
    "dist_version",
    "ladder_key",
    "parse_version",
    "platform_tag",
    "portability_label",
    "portability_rank",
    "portability_short",
    "read_results",
    "set_aside_torn_lines",
    "torch_free_fingerprint",
]
