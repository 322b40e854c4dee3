"""Older records brought up to date, asv-style: each migration takes a record of schema N and returns one of N + 1.
Reading a record (harness.record.cell) runs them; nothing else looks at a record's schema."""

from __future__ import annotations

from typing import Any, Callable, Dict

from harness.record.terms import SCHEMA_VERSION, RecordKind

# Migrations, asv-style: each takes a record of version N and returns one of version N + 1. -------------

# The families' reference strategies when schema 1 was written (schema 1 records did not name them).
SCHEMA1_REFERENCES = {"control_flow": "eager"}


def _from_1(data: Dict[str, Any]) -> Dict[str, Any]:
    fingerprint = data.get("fingerprint") if isinstance(data.get("fingerprint"), dict) else {}
    return dict(
        data,
        schema_version=2,
        reference=SCHEMA1_REFERENCES.get(data["family"], "native"),
        runtime={"name": "onnxruntime", "version": fingerprint.get("onnxruntime")},
        precision="fp32",
    )


# Schema 2 implied a record's kind by its runtime's environment: none for an export, "convert" for a conversion,
# any other for a replay; schema 3 says it, and gives a replay its runtime environment's own fingerprint.
SCHEMA2_CONVERSION_ENV = "convert"


def _from_2(data: Dict[str, Any]) -> Dict[str, Any]:
    runtime = data.get("runtime") if isinstance(data.get("runtime"), dict) else {}
    env = runtime.get("env")
    if env is None:
        return dict(data, schema_version=3, kind=RecordKind.EXPORT.value)
    if env == SCHEMA2_CONVERSION_ENV:
        return dict(data, schema_version=3, kind=RecordKind.CONVERSION.value)
    name = runtime.get("name")
    runtime_fingerprint = {
        "python": runtime.get("python"),
        "platform": runtime.get("platform"),
        "onnxruntime": runtime.get("version") if name == "onnxruntime" else None,
        "openvino": runtime.get("version") if name == "openvino" else None,
        "ort_providers": runtime.get("providers") if name == "onnxruntime" else [],
    }
    return dict(data, schema_version=3, kind=RecordKind.REPLAY.value, runtime_fingerprint=runtime_fingerprint)


# Schema 3's CPU memory was one call's resident-set growth in a warmed process: for eager that is one call's
# working set, for a runtime session (whose arena kept its buffers) almost nothing. Schema 4 keeps, per target, a
# footprint (`<target>`) and a working set (`<target>.working_set`). A schema-3 figure moves to what it measured:
# eager's one call (CPU or CUDA) to its working set; a CUDA session's free-memory delta (weights, arena, one run)
# stays its footprint; a CPU session's warmed run is neither and is kept as `<target>.warm_run`, which no ratio
# reads.
EAGER_TARGETS = ("eager", "reference")
SESSION_FOOTPRINT_METHODS = ("cuda-free-memory-delta", "ort-cuda-arena")


def _memory_key(target: str, peak: Any) -> str:
    method = peak.get("method") if isinstance(peak, dict) else None
    if target in EAGER_TARGETS:
        return f"{target}.working_set"
    return target if method in SESSION_FOOTPRINT_METHODS else f"{target}.warm_run"


def _from_3(data: Dict[str, Any]) -> Dict[str, Any]:
    memory = data.get("memory") if isinstance(data.get("memory"), dict) else {}
    return dict(data, schema_version=4, memory={_memory_key(t, peak): peak for t, peak in memory.items()})


MIGRATIONS: Dict[int, Callable[[Dict[str, Any]], Dict[str, Any]]] = {1: _from_1, 2: _from_2, 3: _from_3}


def migrate(data: Dict[str, Any]) -> Dict[str, Any]:
    while data["schema_version"] != SCHEMA_VERSION:
        data = MIGRATIONS[data["schema_version"]](data)
    return data
