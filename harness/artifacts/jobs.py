"""A stored graph as a job: what the pool sends a replay worker (judge it) or a converter worker (convert it to a
precision), named by its exporting cell and its precision."""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from harness.artifacts.store import MANIFEST, ArtifactError, ArtifactStore, Manifest, content_digest
from harness.judge.parity import PRECISION_TOLERANCES
from harness.judge.wire import WireError
from harness.record import job_id


@dataclass(frozen=True)
class GraphJob:
    manifest: str  # the path of the stored graph's manifest (for a conversion: the fp32 graph's)
    env: str
    cell: str  # the exporting cell's id
    precision: str  # the precision judged, or made
    text: str

    @property
    def cell_id(self) -> str:
        return job_id(self.env, self.cell, self.precision)

    def to_dict(self) -> Dict[str, Any]:
        return {"manifest": self.manifest, "precision": self.precision}

    def label(self) -> str:
        return self.text


def graph_job(store: ArtifactStore, manifest: Manifest, precision: str) -> GraphJob:
    """The job of one stored graph (judged at its own precision, or converted from fp32 to `precision`)."""
    record = manifest.record
    text = f"{record.get('env')} {record.get('case')} {record.get('strategy')} opset {record.get('opset')}"
    text += "" if precision == "fp32" else f" {precision}"
    path = store.folder(manifest.env, manifest.cell_id, manifest.precision) / MANIFEST
    return GraphJob(str(path), manifest.env, manifest.cell_id, precision, text)


def judgement_key(store: ArtifactStore, manifest: Manifest, precision: str) -> Optional[str]:
    """What judging (or converting) a stored graph at `precision` depends on: the graph's content (but for its
    exporter's name and version), the input names, samples and tolerance. Two cells with one key, in two torch
    releases whose exporter wrote the same graph, have one answer on a runtime. None for a file that is no model
    (its own job says what is wrong with it)."""
    try:
        content = content_digest(store.graph_path(manifest).read_bytes())
    except (OSError, WireError):
        return None
    samples = [asdict(s) for s in manifest.samples]
    body = [content, list(manifest.input_names), manifest.atol, manifest.rtol, samples, manifest.converter, precision]
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def stored_graphs(store: ArtifactStore) -> List[Manifest]:
    """Every readable manifest under the store; an unreadable one is named and skipped, never fatal."""
    found = []
    for path in store.manifests():
        try:
            found.append(store.read(path))
        except ArtifactError as exc:
            print(f"skipped: {exc}", file=sys.stderr)
    return found


def range_tolerance(manifest: Manifest, store: ArtifactStore, row: str) -> Tuple[float, float]:
    """A precision's tolerance for this graph: atol a fraction of the reference output's range (peak to peak, at the
    export shape, harness.judge.parity.PRECISION_TOLERANCES[row]) and an rtol; the graph's own for fp32."""
    if row not in PRECISION_TOLERANCES:
        return manifest.atol, manifest.rtol
    fraction, rtol = PRECISION_TOLERANCES[row]
    first = next(s for s in manifest.samples if s.stage == "parity")
    outputs = [a for a in store.arrays(first.outputs) if a.size and np.issubdtype(a.dtype, np.floating)]
    span = max((float(np.nanmax(a) - np.nanmin(a)) for a in outputs), default=0.0)
    return max(fraction * span, manifest.atol), rtol
