"""What is really installed where a run happens: recorded with every cell and used to decide applicability."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import sys
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional, Tuple


def parse_version(text: Optional[str]) -> Tuple[int, ...]:
    """'1.12.1+cu102' -> (1, 12, 1); None or garbage -> ()."""
    if not text:
        return ()
    parts = []
    for piece in re.split(r"[.+]", text)[:3]:
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
    return tuple(parts)


def _dist_version(*names: str) -> Optional[str]:
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _max_opset(torch: Any) -> int:
    for holder, attr in (
        ("torch.onnx._constants", "ONNX_MAX_OPSET"),
        ("torch.onnx._constants", "onnx_main_opset"),
        ("torch.onnx.symbolic_helper", "_onnx_main_opset"),
    ):
        try:
            module = __import__(holder, fromlist=[attr])
            value = getattr(module, attr)
            return int(value)
        except (ImportError, AttributeError):
            continue
    return 13


@dataclass(frozen=True)
class EnvInfo:
    """The environment a run happens in, as measured (not as pinned)."""

    name: str
    python: str
    torch: str
    onnx: Optional[str]
    onnxruntime: Optional[str]
    onnxscript: Optional[str]
    mmcv: Optional[str]
    platform: str
    cpu: str
    gpu: Optional[str]
    cuda: Optional[str]
    driver: Optional[str]
    max_opset: int
    ort_providers: Tuple[str, ...] = ()

    def fingerprint(self) -> Dict[str, Any]:
        data = asdict(self)
        data.pop("name")
        data["ort_providers"] = list(self.ort_providers)
        return data

    def fingerprint_hash(self) -> str:
        blob = json.dumps(self.fingerprint(), sort_keys=True).encode()
        return hashlib.sha1(blob).hexdigest()[:12]

    @property
    def torch_version(self) -> Tuple[int, ...]:
        return parse_version(self.torch)

    @property
    def ort_version(self) -> Tuple[int, ...]:
        return parse_version(self.onnxruntime)


def collect(name: str) -> EnvInfo:
    import torch

    try:
        import onnxruntime

        providers = tuple(onnxruntime.get_available_providers())
    except ImportError:
        providers = ()
    gpu = cuda = driver = None
    if torch.cuda.is_available():
        gpu = torch.cuda.get_device_name(0)
        cuda = torch.version.cuda
        driver = _nvidia_driver()
    return EnvInfo(
        name=name,
        python=platform.python_version(),
        torch=torch.__version__,
        onnx=_dist_version("onnx"),
        onnxruntime=_dist_version("onnxruntime", "onnxruntime-gpu"),
        onnxscript=_dist_version("onnxscript"),
        mmcv=_dist_version("mmcv-full", "mmcv"),
        platform=platform.platform(terse=True),
        cpu=_cpu_name(),
        gpu=gpu,
        cuda=cuda,
        driver=driver,
        max_opset=_max_opset(torch),
        ort_providers=providers,
    )


def _nvidia_driver() -> Optional[str]:
    try:
        with open("/proc/driver/nvidia/version") as fh:
            m = re.search(r"Kernel Module\s+([\d.]+)", fh.read())
            return m.group(1) if m else None
    except OSError:
        return None


def default_env_name() -> str:
    return os.environ.get("HARNESS_ENV") or "py{}.{}".format(*sys.version_info[:2])
