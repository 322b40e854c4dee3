"""What an environment is, as a record keeps it: the versions of what it holds and the machine it ran on. A record
has the exporting environment's, and a replay or a conversion also its runtime or converter environment's."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Dict, Mapping, Optional, Tuple

FINGERPRINT_KEYS = (
    "python",
    "torch",
    "onnx",
    "onnxruntime",
    "onnxscript",
    "mmcv",
    "platform",
    "cpu",
    "gpu",
    "cuda",
    "driver",
)


@dataclass(frozen=True)
class Fingerprint:
    """What was really installed in one environment (not what was pinned): an exporting environment's, or a
    runtime or converter environment's (no torch there)."""

    python: Optional[str] = None
    torch: Optional[str] = None
    onnx: Optional[str] = None
    onnxruntime: Optional[str] = None
    openvino: Optional[str] = None
    onnxscript: Optional[str] = None
    mmcv: Optional[str] = None
    platform: Optional[str] = None
    cpu: Optional[str] = None
    gpu: Optional[str] = None
    cuda: Optional[str] = None
    driver: Optional[str] = None
    max_opset: Optional[int] = None
    ort_providers: Tuple[str, ...] = ()
    # a case's own requirements as installed where it ran ((name, version) pairs; harness.plan Case.requires)
    packages: Tuple[Tuple[str, str], ...] = ()

    def to_json(self) -> Dict[str, Any]:
        data = asdict(self)
        data["ort_providers"] = list(self.ort_providers)
        data["packages"] = dict(self.packages)
        return data

    def hash(self, leave_out: Tuple[str, ...] = ()) -> str:
        """A short hash of the fingerprint; `leave_out` names fields a job does not depend on (mmcv, for a cell
        whose strategy does not use it), so that installing them later keeps its record. No packages hash as
        the fingerprint did before it had them."""
        data = {k: v for k, v in self.to_json().items() if k not in leave_out}
        if not data.get("packages"):
            data.pop("packages", None)
        return hashlib.sha1(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]

    def with_packages(self, packages: Mapping[str, Optional[str]]) -> Fingerprint:
        return replace(self, packages=tuple(sorted((k, str(v)) for k, v in packages.items())))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fingerprint:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["ort_providers"] = tuple(values.get("ort_providers") or ())
        packages = values.get("packages") or {}
        values["packages"] = tuple(sorted((str(k), str(v)) for k, v in dict(packages).items()))
        return cls(**values)
