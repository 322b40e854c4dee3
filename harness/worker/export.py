"""Export a model to ONNX with either exporter, and read back what was really produced."""

from __future__ import annotations

import inspect
import io
import warnings
from typing import Any, Dict, Optional, Sequence


def export_onnx(
    model: Any,
    args: Sequence[Any],
    *,
    opset: int,
    exporter: str,
    input_names: Sequence[str],
    output_names: Sequence[str],
    dynamic_axes: Optional[Dict[str, Dict[int, str]]] = None,
) -> bytes:
    """Serialised ModelProto; raises whatever the exporter raises (its message is the record's)."""
    import torch

    kwargs: Dict[str, Any] = dict(
        opset_version=opset,
        input_names=list(input_names),
        output_names=list(output_names),
    )
    if dynamic_axes:
        kwargs["dynamic_axes"] = dynamic_axes
    parameters = inspect.signature(torch.onnx.export).parameters
    accepts_dynamo = "dynamo" in parameters
    if exporter == "torchscript" and isinstance(model, torch.jit.ScriptModule) and "example_outputs" in parameters:
        with torch.no_grad():  # torch < 1.10 cannot export a scripted module without its outputs
            kwargs["example_outputs"] = model(*args)
    if exporter == "dynamo":
        if not accepts_dynamo:
            raise RuntimeError(f"torch {torch.__version__} has no dynamo exporter")
        kwargs["dynamo"] = True
        kwargs["verbose"] = False
    elif accepts_dynamo:
        kwargs["dynamo"] = False
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            if exporter == "dynamo":
                program = torch.onnx.export(model, tuple(args), None, **kwargs)
                return program.model_proto.SerializeToString()
            torch.onnx.export(model, tuple(args), buffer, **kwargs)
    return buffer.getvalue()


def dynamo_available() -> Optional[str]:
    """None when this torch has a usable dynamo exporter, else the reason."""
    import torch

    if "dynamo" not in inspect.signature(torch.onnx.export).parameters:
        return f"torch {torch.__version__} has no dynamo exporter (it came with torch 2.x)"
    try:
        import onnxscript  # noqa: F401
    except ImportError:
        return "the dynamo exporter needs onnxscript, which this environment lacks"
    return None


def check_model(blob: bytes) -> None:
    import onnx

    onnx.checker.check_model(onnx.load_model_from_string(blob))
