"""Running a stored graph with every intermediate exposed, and the trusted runs kept beside the graph.

    artifacts/<env>/<cell_id>[/<precision>]/traces/<runtime>-<version>-<inputs>.json
        the tensors of one trusted run (name -> array digest under artifacts/arrays/), or why there are none

The arrays are content-addressed like the graph's samples, so an input set's intermediates shared by many mismatches
(one graph judged wrong by OpenVINO 2023 and 2026) are computed and stored once. Torch- and onnx-free: this runs in
runtime environments (the graph is edited at the wire level, harness.judge.wire).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from harness.artifacts.store import ArtifactStore, Manifest, Sample
from harness.judge.wire import exposed, graph_outputs
from harness.replay.runtimes import RuntimeAdapter

TRACES = "traces"
TRACE_SCHEMA = 1


class Unexposable(Exception):
    """The runtime cannot run this graph with its intermediates exposed: it refuses an output, or drops some."""


@dataclass(frozen=True)
class Exposed:
    """One run of a graph with every intermediate exposed: each tensor by name, the graph's own outputs first."""

    tensors: Dict[str, np.ndarray]
    outputs: Tuple[str, ...]  # the graph's own outputs (the ones judged against the reference)


def samples_of(manifest: Manifest, stages: Sequence[str]) -> List[Sample]:
    return [s for s in manifest.samples if s.stage in stages]


def run_exposed(
    adapter: RuntimeAdapter,
    graph: bytes,
    inputs: Sequence[np.ndarray],
    manifest: Manifest,
    only: Optional[Sequence[str]] = None,
) -> Exposed:
    """The graph run once in this runtime with every node output (or those of `only`) made a graph output."""
    own = tuple(graph_outputs(graph))
    model, _ = exposed(graph, only)
    names = graph_outputs(model)
    handle, path = tempfile.mkstemp(suffix=".onnx")
    try:
        with os.fdopen(handle, "wb") as fh:
            fh.write(model)
        try:
            loaded = adapter.load(path, 1, manifest.input_names)
        except Exception as exc:
            raise Unexposable(f"it refuses the graph with its intermediates as outputs: {_first_line(exc)}") from None
        try:
            values = loaded.run(list(inputs))
        except Exception as exc:
            raise Unexposable(
                f"it fails running the graph with its intermediates as outputs: {_first_line(exc)}"
            ) from None
    finally:
        os.unlink(path)
    if len(values) != len(names):
        raise Unexposable(f"it gave {len(values)} of the {len(names)} outputs asked for")
    return Exposed({n: np.asarray(v) for n, v in zip(names, values)}, own)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


def trace_path(store: ArtifactStore, manifest: Manifest, runtime: Tuple[str, str], sample: Sample) -> Path:
    """Where one trusted run of a graph on one input set lives: named by the runtime and the inputs' digests."""
    inputs = hashlib.sha256("\0".join(sample.inputs).encode()).hexdigest()[:16]
    folder = store.folder(manifest.env, manifest.cell_id, manifest.precision) / TRACES
    return folder / f"{runtime[0]}-{runtime[1]}-{inputs}.json"


def write_trace(path: Path, body: Dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(json.dumps(dict(body, schema_version=TRACE_SCHEMA), sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def read_trace(path: Path) -> Optional[Dict[str, object]]:
    """A stored trusted run, or None when there is none (or one of another schema)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema_version") == TRACE_SCHEMA else None


def store_trace(
    store: ArtifactStore,
    manifest: Manifest,
    adapter: RuntimeAdapter,
    sample: Sample,
    limit_bytes: int,
) -> Dict[str, object]:
    """One trusted run traced and stored (or the reason it cannot be, stored as well: the locating side reads it)."""
    label = (adapter.name, str(adapter.version))
    body: Dict[str, object] = {"graph": manifest.graph, "runtime": list(label), "sample": sample.label}
    try:
        run = run_exposed(adapter, store.graph_path(manifest).read_bytes(), store.arrays(sample.inputs), manifest)
    except Unexposable as why:
        body["error"] = str(why)
    else:
        size = sum(a.nbytes for a in run.tensors.values())
        if size > limit_bytes:
            body["error"] = (
                f"its intermediates take {size / 2**20:.0f} MiB, over the {limit_bytes / 2**20:.0f} MiB limit"
            )
        else:
            body["tensors"] = {name: store.put_array(a) for name, a in run.tensors.items()}
            body["outputs"] = list(run.outputs)
    write_trace(trace_path(store, manifest, label, sample), body)
    return body
