"""onnx-compat-matrix: run PyTorch-to-ONNX export cases across environments and report what works."""

from __future__ import annotations

__version__ = "0.2.0"

from harness.plan.registry import Case, register_case  # noqa: E402

__all__ = ["Case", "register_case", "__version__"]
