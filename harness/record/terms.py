"""The words a record is written in, shared by the runner and the reporter: verdicts, portability, versions,
canonical parameters. Torch-free and Python 3.8-clean: both sides import it."""

from __future__ import annotations

import json
import math
import re
from enum import Enum
from typing import Any, Mapping, Optional, Tuple

SCHEMA_VERSION = 4


class RecordKind(str, Enum):
    """What job wrote a record; every record says it, the page never infers it."""

    EXPORT = "export"  # a cell exported and judged by its own environment's onnxruntime
    REPLAY = "replay"  # a stored graph judged again by a runtime environment of the ladder
    CONVERSION = "conversion"  # a converter's own result for a stored graph (made, failed, or not applicable)
    SEARCH = "search"  # a recipe search's answer: the fewest nodes kept float that pass, or the best it reached
    TRACE = "trace"  # a trusted runtime's intermediates of a stored graph, stored for `divergence` records
    DIVERGENCE = "divergence"  # where a mismatching graph first parts from a trusted run of it (harness diverge)

    def __str__(self) -> str:
        return self.value


class Verdict(str, Enum):
    """What became of a cell; the first stage that fails names it. Order: the legend's, best first."""

    PASS = "pass"
    MISMATCH = "mismatch"
    OPSET_DRIFT = "opset_drift"
    EXPORT_FAILED = "export_failed"
    CHECK_FAILED = "check_failed"
    LOAD_FAILED = "load_failed"
    RUN_FAILED = "run_failed"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    NOT_APPLICABLE = "not_applicable"
    HARNESS_ERROR = "harness_error"  # a bug of ours, never a failing strategy

    def __str__(self) -> str:
        return self.value


class Portability(str, Enum):
    """Where a strategy's exported graph can run."""

    STANDARD = "standard"
    ORT_CONTRIB = "ort_contrib"
    CUSTOM_DOMAIN = "custom_domain"

    def __str__(self) -> str:
        return self.value


PORTABILITY_LABELS = {
    Portability.STANDARD: "standard ONNX ops",
    Portability.ORT_CONTRIB: "onnxruntime contrib op (runs only in onnxruntime)",
    Portability.CUSTOM_DOMAIN: "custom domain (needs a runtime kernel of your own)",
}
PORTABILITY_SHORT = {
    Portability.STANDARD: "standard",
    Portability.ORT_CONTRIB: "ORT contrib",
    Portability.CUSTOM_DOMAIN: "custom",
}


def portability_label(portability: str) -> str:
    try:
        return PORTABILITY_LABELS[Portability(portability)]
    except ValueError:
        return f"unknown portability ({portability})"


def portability_short(portability: str) -> str:
    """The short word for a portability ("ORT contrib"); the raw value for one this harness does not know."""
    try:
        return PORTABILITY_SHORT[Portability(portability)]
    except ValueError:
        return portability


def portability_rank(portability: str) -> int:
    order = list(Portability)
    try:
        return order.index(Portability(portability))
    except ValueError:
        return len(order)


def canonical_params(params: Mapping[str, Any]) -> str:
    """The canonical text of a case's parameters: the identity used for cell ids, joins and de-duplication."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)


_DIGITS = re.compile(r"\d+")


def parse_version(text: Optional[str]) -> Tuple[int, ...]:
    """'1.12.1+cu102' -> (1, 12, 1); '2.13.0.dev20260101' -> (2, 13, 0); None or garbage -> ()."""
    if not isinstance(text, str):
        return ()
    parts = []
    for piece in text.split("+")[0].split(".")[:3]:
        found = _DIGITS.match(piece)
        if not found:
            break
        parts.append(int(found.group()))
    return tuple(parts)


def clean(value: Any) -> Any:
    """JSON has no NaN or infinity: they become null (a parity note says why where it matters)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    return value


# The runtime ladder's order: onnxruntime by version, then OpenVINO by version, then any other runtime by name.
RUNTIME_ORDER = ("onnxruntime", "openvino")


def ladder_key(name: str, version: Optional[str]) -> Tuple[int, str, Tuple[int, ...]]:
    """Where a runtime (its record's name and version) stands on the ladder; the noxfile and the page both sort
    by it."""
    rank = RUNTIME_ORDER.index(name) if name in RUNTIME_ORDER else len(RUNTIME_ORDER)
    return (rank, name, parse_version(version) or (999,))


_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
_SYSTEMS = {"linux": "linux", "windows": "win", "macos": "macos", "darwin": "macos"}


def platform_tag(platform: Any) -> str:
    """ "Linux-6.1.0-28-amd64-x86_64-with-glibc2.36" -> "linux_x86_64": Python's platform.platform() in the words
    of the environment files' `platforms` (linux_x86_64, linux_aarch64, win_amd64), for this machine (the
    noxfile) and for a fingerprint (the page); "—" when none was recorded, the text itself when it names no
    known system."""
    if not isinstance(platform, str) or not platform:
        return "—"
    words = platform.lower().split("-")
    arch = next((_ARCH[w] for w in reversed(words) if w in _ARCH), None)
    system = next((_SYSTEMS[w] for w in words if w in _SYSTEMS), None)
    if system == "win":
        return "win_amd64" if arch in (None, "x86_64") else f"win_{arch}"
    return f"{system}_{arch}" if system and arch else platform


def job_id(env: str, cell: str, precision: str) -> str:
    """A stored graph's job across the campaigns ("torch2/1a2b", "torch2/1a2b@fp16"): its exporting environment and
    cell, and the precision judged or made (CellRecord.judged_with names one)."""
    return f"{env}/{cell}" + ("" if precision == "fp32" else f"@{precision}")


def split_job_id(job: str) -> Tuple[str, str, str]:
    """job_id's parts: (env, cell, precision)."""
    env, _, rest = job.partition("/")
    cell, _, precision = rest.partition("@")
    return env, cell, precision or "fp32"
