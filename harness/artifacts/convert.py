"""An exported fp32 graph converted to the precisions people ship, each by a named recipe
(harness.record.precisions): fp16 by onnxruntime's float16 converter (the one its optimizer's --float16 and Olive
use) and by onnxconverter-common's, inputs and outputs kept fp32; int8-dynamic (onnxruntime's dynamic quantization);
int8-static over every op it can and over the weighted ops only (onnxruntime's QDQ quantization after its
quant_pre_process, calibrated on the calibration input sets the worker stored, never on the evaluation inputs).

Every converted graph is checked with onnx.checker (full check): a graph that fails it is the converter's failure,
never a runtime's. Runs in the converter environment (onnx, the converters, onnxruntime; no torch). Each converter's
own exception is its message; a precision that means nothing for a graph raises NotApplicable with the reason.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from dataclasses import replace
from importlib import metadata
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence

import numpy as np

from harness.artifacts.jobs import range_tolerance
from harness.artifacts.store import MANIFEST, ArtifactStore, Manifest, graph_digest
from harness.judge.graph import describe_model
from harness.judge.stages import first_line
from harness.record.precisions import CONVERSIONS, precision_of

# The ops a CNN's usual int8 recipe quantizes: the weighted ones.
WEIGHTED_OPS = ("Conv", "MatMul", "Gemm")


class NotApplicable(Exception):
    """This precision means nothing for this graph (an integer-only graph, nothing to quantize)."""


class InvalidGraph(Exception):
    """The converter wrote a graph that onnx.checker refuses: the converter's failure, not a runtime's."""


class Converted(NamedTuple):
    graph: bytes
    converter: str


def _version(dist: str) -> str:
    return f"{dist} {metadata.version(dist)}"


def to_fp16(
    path: str,
    manifest: Manifest,
    store: ArtifactStore,
    keep: Sequence[str] = (),
    prepared: bool = False,
    symbolic: bool = True,
) -> Converted:
    """onnxruntime's float16 conversion as its optimizer (--float16) and Olive run it: OnnxModel's, which removes
    the casts it made redundant, then sorted as its save sorts; `keep` names nodes left in float. `symbolic=False`:
    the tensor types from ONNX's shape inference rather than onnxruntime's symbolic one, which stops at a contrib op
    and leaves the converter without types."""
    import onnx
    from onnxruntime.transformers.onnx_model import OnnxModel

    model = OnnxModel(onnx.load(path))
    model.convert_float_to_float16(
        use_symbolic_shape_infer=symbolic, keep_io_types=True, node_block_list=list(keep) or None
    )
    model.topological_sort()
    return Converted(model.model.SerializeToString(), converter_of("fp16"))


def to_fp16_onnxconverter(
    path: str, manifest: Manifest, store: ArtifactStore, keep: Sequence[str] = (), prepared: bool = False
) -> Converted:
    import onnx
    from onnxconverter_common import float16

    model = float16.convert_float_to_float16(onnx.load(path), keep_io_types=True, node_block_list=list(keep) or None)
    return Converted(model.SerializeToString(), converter_of("fp16-onnxconverter"))


def to_int8_dynamic(
    path: str, manifest: Manifest, store: ArtifactStore, keep: Sequence[str] = (), prepared: bool = False
) -> Converted:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "int8.onnx")
        quantize_dynamic(path, out, weight_type=QuantType.QInt8, nodes_to_exclude=list(keep))
        graph = _read(out)
    if not _has_integer_ops(graph):
        raise NotApplicable("dynamic quantization found no weighted operator (MatMul, Conv, Gemm, ...) to quantize")
    return Converted(graph, converter_of("int8-dynamic"))


def to_int8_static(
    path: str, manifest: Manifest, store: ArtifactStore, keep: Sequence[str] = (), prepared: bool = False
) -> Converted:
    return _quantize_static(path, manifest, store, None, keep, prepared)


def to_int8_static_weighted(
    path: str, manifest: Manifest, store: ArtifactStore, keep: Sequence[str] = (), prepared: bool = False
) -> Converted:
    return _quantize_static(path, manifest, store, WEIGHTED_OPS, keep, prepared)


def calibration_reader(manifest: Manifest, store: ArtifactStore) -> Any:
    """onnxruntime's CalibrationDataReader over the stored calibration sets, one per call, then None."""
    from onnxruntime.quantization import CalibrationDataReader

    sets = [store.arrays(s.inputs) for s in manifest.samples if s.stage == "calibration"]
    if not sets:
        raise NotApplicable("no calibration inputs were stored with this graph (a benchmark-size case)")

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds: Iterator[Dict[str, np.ndarray]] = iter(
                [dict(zip(manifest.input_names, arrays)) for arrays in sets]
            )

        def get_next(self):  # noqa: ANN201 (onnxruntime's interface)
            return next(self.feeds, None)

    return Reader()


def pre_processed(path: str, out: str) -> str:
    """The graph after onnxruntime's quant_pre_process (basic optimisation, shape inference), as its quantization
    guide asks before quantize_static; the nodes a recipe keeps float are named in this graph. ONNX's shape
    inference, not the symbolic one the guide keeps for transformer models (it gives up on a CNN's dynamic axes)."""
    from onnxruntime.quantization import quant_pre_process

    with scratch_cwd():
        quant_pre_process(path, out, skip_symbolic_shape=True)
    return out


def _quantize_static(
    path: str,
    manifest: Manifest,
    store: ArtifactStore,
    ops: Optional[Sequence[str]],
    keep: Sequence[str],
    prepared: bool,
) -> Converted:
    """QDQ quantization of `ops` (every op it can: None), after quant_pre_process unless `path` is `prepared`."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    reader = calibration_reader(manifest, store)
    with tempfile.TemporaryDirectory() as tmp:
        ready = path if prepared else pre_processed(path, os.path.join(tmp, "pre.onnx"))
        out = os.path.join(tmp, "int8.onnx")
        quantize_static(
            ready,
            out,
            reader,
            quant_format=QuantFormat.QDQ,
            op_types_to_quantize=list(ops) if ops else None,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=list(keep),
        )
        graph = _read(out)
    if ops and "QuantizeLinear" not in describe_model(graph)["op_types"]:
        raise NotApplicable(f"static quantization of {', '.join(ops)} found none of them to quantize")
    return Converted(graph, converter_of("int8-static"))


Convert = Callable[..., Converted]
CONVERTERS: Dict[str, Convert] = {
    "fp16": to_fp16,
    "fp16-onnxconverter": to_fp16_onnxconverter,
    "int8-dynamic": to_int8_dynamic,
    "int8-static": to_int8_static,
    "int8-static-weighted": to_int8_static_weighted,
}
PRECISIONS = tuple(p for p in CONVERSIONS if p in CONVERTERS or precision_of(p).searched_from in CONVERTERS)


# How far a converted graph can be checked, by what its fp32 graph passes itself (a check the exporter's graph fails
# says nothing of the converter): onnx.checker's full check, else the plain one and onnxruntime's typing, else the
# plain one alone.
FULL, TYPED, PLAIN = "full", "typed", "plain"


def check(graph: bytes, converter: str, level: str = FULL) -> None:
    """onnx.checker's full check (types and shapes inferred through the graph), or what `level` allows: a graph it
    refuses is the converter's."""
    import onnx

    try:
        onnx.checker.check_model(onnx.load_from_string(graph), full_check=level == FULL)
    except Exception as exc:  # onnx raises ValidationError, InferenceError and others
        raise InvalidGraph(f"{converter} wrote invalid ONNX: {first_line(exc)}") from exc
    if level == TYPED:  # the full check infers every type; the plain one does not, onnxruntime's loader does
        typed_by_onnxruntime(graph, converter)


# What onnxruntime says when a graph's types do not hold together (not a missing kernel, which is a runtime's):
# the converter environment's onnxruntime is the newest, and its quantizer's own.
TYPE_ERRORS = ("TypeInferenceError", "ShapeInferenceError", "Type Error:", "INVALID_GRAPH")


def typed_by_onnxruntime(graph: bytes, converter: str) -> None:
    """The type inference of the converter environment's onnxruntime, without its graph optimisations (whose own bugs
    are the runtime's): where it refuses the types the plain check let through, the graph is the converter's failure,
    not a runtime's load_failed."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL  # typing, not speed
    try:
        onnxruntime.InferenceSession(graph, sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own Fail, InvalidGraph and others
        text = first_line(exc)
        if any(word in str(exc) for word in TYPE_ERRORS):
            version = onnxruntime.__version__
            raise InvalidGraph(f"{converter} wrote a graph onnxruntime {version} cannot type: {text}") from exc


@functools.lru_cache(maxsize=64)
def source_checks(path: str, digest: str) -> str:
    """How far the fp32 graph itself passes the checks (FULL, TYPED or PLAIN): its converted graphs are checked as
    far, no further. Once per graph (`digest`: its content) in a worker, whatever the precisions converted."""
    import onnx

    try:
        onnx.checker.check_model(onnx.load(path), full_check=True)
    except Exception:  # the exporter's own graph: its failure is not the converter's
        try:
            with open(path, "rb") as fh:
                typed_by_onnxruntime(fh.read(), "the exporter")
        except InvalidGraph:
            return PLAIN
        return TYPED
    return FULL


def convert(manifest: Manifest, store: ArtifactStore, precision: str) -> Manifest:
    """The fp32 graph converted by the precision's recipe, checked and stored beside it; its manifest."""
    return store_converted(manifest, store, precision, make_conversion(manifest, store, precision), None)


def make_conversion(manifest: Manifest, store: ArtifactStore, precision: str) -> Converted:
    """The fp32 graph converted by the precision's recipe and checked; NotApplicable, InvalidGraph or the
    converter's own exception otherwise."""
    if not _has_float_io(manifest, store):
        raise NotApplicable("an integer-only graph: no float tensor to convert")
    path = str(store.graph_path(manifest))
    with scratch_cwd():
        converted = CONVERTERS[precision](path, manifest, store)
    check(converted.graph, converted.converter, source_checks(path, manifest.graph))
    return converted


def store_converted(
    manifest: Manifest, store: ArtifactStore, precision: str, converted: Converted, recipe: Optional[Dict[str, Any]]
) -> Manifest:
    """The converted graph stored beside its fp32 one, judged by the precision's tolerance; its manifest."""
    info = describe_model(converted.graph)
    record = dict(manifest.record, precision=precision, converter=converted.converter, recipe=recipe)
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


@contextlib.contextmanager
def scratch_cwd() -> Iterator[str]:
    """A converter works in a folder of its own: onnxruntime's symbolic shape inference, when it gives up, saves the
    model it reached as sym_shape_infer_temp.onnx, its tensors in uuid-named .data files, in the working directory,
    which would be the user's checkout. Paths handed to a converter are absolute (ArtifactStore's root is)."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="convert-") as tmp:
        os.chdir(tmp)
        try:
            yield tmp
        finally:
            os.chdir(here)


def store_like(manifest: Manifest, store: ArtifactStore, precision: str, twin: Manifest) -> Manifest:
    """`twin`'s conversion to `precision` (the same fp32 graph but for its exporter's version) stored as
    `manifest`'s: the same converter on the same graph writes the same graph."""
    converted = store.read(store.folder(twin.env, twin.cell_id, precision) / MANIFEST)
    graph = store.graph_path(converted).read_bytes()
    record = dict(manifest.record, precision=precision, converter=converted.converter)
    record.update(recipe=converted.record.get("recipe"), export=converted.record.get("export"))
    # the same samples and tolerance (the twin key holds them): only the identity is the manifest's own
    out = replace(converted, env=manifest.env, cell_id=manifest.cell_id, record=record, source=manifest.digest)
    store.write(out, graph)
    return out


def tolerance(manifest: Manifest, store: ArtifactStore, precision: str) -> List[float]:
    """The precision's tolerance for this graph (harness.artifacts.jobs.range_tolerance)."""
    return list(range_tolerance(manifest, store, precision_of(precision).tolerance))


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
    made = precision_of(precision)
    base = made.searched_from or precision
    if base == "fp16":
        return _version("onnxruntime") + " float16"
    if base == "fp16-onnxconverter":
        return _version("onnxconverter-common")
    return _version("onnxruntime") + " quantization"
