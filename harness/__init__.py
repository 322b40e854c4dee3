"""onnx-compat-matrix: run PyTorch-to-ONNX export cases across environments and report what works."""

from __future__ import annotations

__version__ = "0.1.0"
SCHEMA_VERSION = 1

from harness.registry import Case, register_case  # noqa: E402

__all__ = ["Case", "register_case", "__version__", "SCHEMA_VERSION"]
