"""What is installed where a job runs, torch-free: the environment's name with its fingerprint (`EnvInfo`), the
versions of installed distributions, and the fingerprint of a runtime or converter environment (no torch there).

The planner, the strategies, the worker and the replay all take these from here; torch's own parts of a
fingerprint (its version, CUDA, the highest opset) are filled in by the worker (harness.worker.fingerprint)."""

from __future__ import annotations

import os
import platform
import re
import sys
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

from harness.record.fingerprint import Fingerprint
from harness.record.terms import parse_version


def dist_version(*names: str) -> Optional[str]:
    """The installed version of the first of these distributions that is installed, else None."""
    from importlib import metadata

    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def default_env_name() -> str:
    return os.environ.get("HARNESS_ENV") or "py{}.{}".format(*sys.version_info[:2])


def torch_free_fingerprint(providers: Tuple[str, ...] = ()) -> Fingerprint:
    """A runtime or converter environment as installed: Python, onnx, onnxruntime, OpenVINO, the machine."""
    return Fingerprint(
        python=platform.python_version(),
        onnx=dist_version("onnx"),
        onnxruntime=dist_version("onnxruntime", "onnxruntime-gpu"),
        openvino=dist_version("openvino"),
        platform=platform.platform(terse=True),
        cpu=cpu_name(),
        ort_providers=providers,
    )


@dataclass(frozen=True)
class EnvInfo:
    """The environment a run happens in, by the name the run was given and as measured."""

    name: str
    fingerprint: Fingerprint

    @property
    def torch(self) -> str:
        return self.fingerprint.torch or "?"

    @property
    def onnxruntime(self) -> Optional[str]:
        return self.fingerprint.onnxruntime

    @property
    def max_opset(self) -> int:
        return self.fingerprint.max_opset or 13

    @property
    def gpu(self) -> Optional[str]:
        return self.fingerprint.gpu


_SPECIFIER = re.compile(r"(===|==|!=|~=|>=|<=|>|<)\s*([A-Za-z0-9.*+!_-]+)")


def requirement_name(requirement: str) -> str:
    """A pip requirement's distribution name, normalised ("Kornia_RS>=0.1" -> "kornia-rs")."""
    found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return re.sub(r"[-_.]+", "-", found.group(1)).lower() if found else requirement.strip().lower()


def satisfied(requirement: str, version: Optional[str]) -> bool:
    """Whether an installed version meets a requirement's version specifiers (no markers or extras: a case's
    requires are plain `name[ op version, ...]`)."""
    if version is None:
        return False
    have = _padded(parse_version(version))
    for op, wanted in _SPECIFIER.findall(requirement.split(";")[0]):
        prefix = parse_version(wanted.rstrip(".*"))
        want = _padded(prefix)
        if op in ("==", "===") and wanted.endswith(".*"):
            ok = have[: len(prefix)] == prefix
        else:
            ok = {
                "==": have == want,
                "===": version == wanted,
                "!=": have != want,
                ">=": have >= want,
                "<=": have <= want,
                ">": have > want,
                "<": have < want,
                "~=": have >= want and have[: max(1, len(prefix) - 1)] == prefix[: max(1, len(prefix) - 1)],
            }[op]
        if not ok:
            return False
    return True


def _padded(version: Tuple[int, ...]) -> Tuple[int, ...]:
    return version + (0,) * (3 - len(version))


def installed_packages(requires: Sequence[str]) -> Dict[str, Optional[str]]:
    """Each required distribution's installed version here (None where it is not installed)."""
    names = (requirement_name(r) for r in requires)
    return {name: dist_version(name) for name in names}
