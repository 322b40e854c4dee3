"""An exported fp32 graph converted to the precisions people ship: fp16 (onnxconverter-common, inputs and outputs
kept fp32), int8-dynamic (onnxruntime's dynamic quantization) and int8-static (onnxruntime's QDQ quantization,
calibrated on the calibration input sets the worker stored, never on the evaluation inputs).

Runs in the converter environment (onnx, onnxconverter-common, onnxruntime; no torch). Each converter's own
exception is its message; a precision that means nothing for a graph raises NotApplicable with the reason.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from dataclasses import replace
from importlib import metadata
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional

import numpy as np

from harness.artifacts.store import ArtifactStore, Manifest, graph_digest
from harness.judge.graph import describe_model
from harness.judge.parity import PRECISION_TOLERANCES
from harness.judge.stages import first_line, message_of
from harness.record import CellRecord, RecordKind, Runtime, Stage, Verdict, torch_free_fingerprint

PRECISIONS = tuple(PRECISION_TOLERANCES)


class NotApplicable(Exception):
    """This precision means nothing for this graph (an integer-only graph, nothing to quantize)."""


class Converted(NamedTuple):
    graph: bytes
    converter: str


def _version(dist: str) -> str:
    return f"{dist} {metadata.version(dist)}"


def to_fp16(path: str, manifest: Manifest, store: ArtifactStore) -> Converted:
    import onnx
    from onnxconverter_common import float16

    model = float16.convert_float_to_float16(onnx.load(path), keep_io_types=True)
    return Converted(model.SerializeToString(), _version("onnxconverter-common"))


def to_int8_dynamic(path: str, manifest: Manifest, store: ArtifactStore) -> Converted:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "int8.onnx")
        quantize_dynamic(path, out, weight_type=QuantType.QInt8)
        graph = _read(out)
    if not _has_integer_ops(graph):
        raise NotApplicable("dynamic quantization found no weighted operator (MatMul, Conv, Gemm, ...) to quantize")
    return Converted(graph, _version("onnxruntime") + " quantization")


def to_int8_static(path: str, manifest: Manifest, store: ArtifactStore) -> Converted:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    sets = [store.arrays(s.inputs) for s in manifest.samples if s.stage == "calibration"]
    if not sets:
        raise NotApplicable("no calibration inputs were stored with this graph (a benchmark-size case)")

    class Reader(CalibrationDataReader):  # the stored calibration sets, one per call, then None
        def __init__(self) -> None:
            self.feeds: Iterator[Dict[str, np.ndarray]] = iter(
                [dict(zip(manifest.input_names, arrays)) for arrays in sets]
            )

        def get_next(self):  # noqa: ANN201 (onnxruntime's interface)
            return next(self.feeds, None)

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "int8.onnx")
        quantize_static(
            path,
            out,
            Reader(),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
        )
        graph = _read(out)
    return Converted(graph, _version("onnxruntime") + " quantization")


CONVERTERS: Dict[str, Callable[[str, Manifest, ArtifactStore], Converted]] = {
    "fp16": to_fp16,
    "int8-dynamic": to_int8_dynamic,
    "int8-static": to_int8_static,
}


def convert(manifest: Manifest, store: ArtifactStore, precision: str) -> Manifest:
    """The converted graph stored beside its fp32 one, judged by the precision's tolerance; its manifest."""
    if not _has_float_io(manifest, store):
        raise NotApplicable("an integer-only graph: no float tensor to convert")
    converted = CONVERTERS[precision](str(store.graph_path(manifest)), manifest, store)
    info = describe_model(converted.graph)
    record = dict(manifest.record, precision=precision, converter=converted.converter)
    record["export"] = {k: info[k] for k in ("nodes", "op_types", "domains", "bytes")}
    atol, rtol = tolerance(manifest, store, precision)
    out = replace(
        manifest,
        record=record,
        atol=atol,
        rtol=rtol,
        graph=graph_digest(converted.graph),
        precision=precision,
        converter=converted.converter,
        source=manifest.digest,
    )
    store.write(out, converted.graph)
    return out


def tolerance(manifest: Manifest, store: ArtifactStore, precision: str) -> List[float]:
    """atol a fraction of the reference output's range (peak to peak, at the export shape), and an rtol."""
    fraction, rtol = PRECISION_TOLERANCES[precision]
    first = next(s for s in manifest.samples if s.stage == "parity")
    outputs = [a for a in store.arrays(first.outputs) if a.size and np.issubdtype(a.dtype, np.floating)]
    span = max((float(np.nanmax(a) - np.nanmin(a)) for a in outputs), default=0.0)
    return [max(fraction * span, manifest.atol), rtol]


def _has_float_io(manifest: Manifest, store: ArtifactStore) -> bool:
    first = next(s for s in manifest.samples if s.stage == "parity")
    arrays = store.arrays(first.inputs) + store.arrays(first.outputs)
    return any(np.issubdtype(a.dtype, np.floating) for a in arrays)


def _has_integer_ops(graph: bytes) -> bool:
    ops = describe_model(graph)["op_types"]
    return any(
        op.split("::")[-1] in ("DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "QuantizeLinear") for op in ops
    )


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def converter_of(precision: str) -> str:
    """The converter that makes a precision here, with its version (a conversion's resume key holds it)."""
    if precision == "fp16":
        return _version("onnxconverter-common")
    return _version("onnxruntime") + " quantization"


def convert_job(store: ArtifactStore, manifest: Manifest, precision: str) -> CellRecord:
    """One conversion as its record: made (pass), not applicable with the reason, or the converter's failure with
    its own message; never raises for the converter's sake."""
    converter = converter_of(precision)
    start = time.monotonic()
    try:
        made = convert(manifest, store, precision)
    except NotApplicable as why:
        return conversion_record(manifest, precision, converter, Verdict.NOT_APPLICABLE, f"{precision}: {why}")
    except Exception as exc:  # the converter's own failure, with its message
        text = message_of(exc) + "\n" + traceback.format_exc()[-1500:]
        stage = Stage("convert", "failed", type(exc).__name__, text, round(time.monotonic() - start, 4))
        reason = f"convert: {type(exc).__name__}: {first_line(exc)}"
        return conversion_record(manifest, precision, converter, Verdict.EXPORT_FAILED, reason, stage)
    stage = Stage("convert", "ok", seconds=round(time.monotonic() - start, 4))
    return conversion_record(manifest, precision, made.converter, Verdict.PASS, None, stage)


def conversion_record(
    manifest: Manifest,
    precision: str,
    converter: str,
    verdict: Verdict,
    reason: Optional[str],
    stage: Optional[Stage] = None,
) -> CellRecord:
    """The exporting cell's record as the converter left it: its kind `conversion`, the converter, the fp32 graph it
    converted (`artifact`), the converter environment's fingerprint. No runtime judged it: the replays do."""
    exported = CellRecord.from_json(manifest.record)
    return exported.with_(
        kind=RecordKind.CONVERSION.value,
        precision=precision,
        runtime=Runtime("onnxruntime", metadata.version("onnxruntime"), env="convert"),
        runtime_fingerprint=torch_free_fingerprint(),
        converter=converter,
        artifact=manifest.digest,
        verdict=verdict,
        reason=reason,
        stages=(stage,) if stage else (),
        parity=None,
        eager_parity=None,
        latency={},
        memory={},
        traceback=None,
    )
