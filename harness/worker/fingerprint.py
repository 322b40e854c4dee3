"""What is really installed where a cell runs, torch's parts included: recorded with every cell and used to decide
applicability. The torch-free parts (EnvInfo, dist_version) live in harness.record."""

from __future__ import annotations

import importlib
import platform
import re
from typing import Optional

from harness.record import EnvInfo, Fingerprint, cpu_name, dist_version

# Where each torch release keeps its exporters' highest opset, newest names first.
_OPSET_CONSTANTS = {
    "any": (
        ("torch.onnx._constants", "ONNX_MAX_OPSET"),
        ("torch.onnx._constants", "onnx_main_opset"),
        ("torch.onnx.symbolic_helper", "_onnx_main_opset"),
    ),
    "torchscript": (("torch.onnx._constants", "ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET"),),
}


def max_opset(exporter: str = "any") -> int:
    """The highest opset this torch exports (13 on 1.8, 16 on 1.12); `torchscript` for that exporter's own cap."""
    holders = _OPSET_CONSTANTS.get(exporter, ()) + _OPSET_CONSTANTS["any"]
    for module, attr in holders:
        try:
            return int(getattr(importlib.import_module(module), attr))
        except (ImportError, AttributeError):
            continue
    return 13


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
    fingerprint = Fingerprint(
        python=platform.python_version(),
        torch=torch.__version__,
        onnx=dist_version("onnx"),
        onnxruntime=dist_version("onnxruntime", "onnxruntime-gpu"),
        onnxscript=dist_version("onnxscript"),
        mmcv=dist_version("mmcv-full", "mmcv"),
        platform=platform.platform(terse=True),
        cpu=cpu_name(),
        gpu=gpu,
        cuda=cuda,
        driver=driver,
        max_opset=max_opset(),
        ort_providers=providers,
    )
    return EnvInfo(name, fingerprint)


def _nvidia_driver() -> Optional[str]:
    try:
        with open("/proc/driver/nvidia/version") as fh:
            m = re.search(r"Kernel Module\s+([\d.]+)", fh.read())
            return m.group(1) if m else None
    except OSError:
        return None
