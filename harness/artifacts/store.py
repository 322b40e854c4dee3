"""The artifacts folder: each exported graph beside its samples (inputs and the eager reference's outputs), the
tolerance it was judged by and the exporting cell's record. Written by the worker, read by the replay.

    artifacts/arrays/<digest>.npy.gz       an array, content-addressed: the inputs and reference outputs that many
                                           cells share (the same seed, the same shape) are stored once, compressed
    artifacts/<env>/<cell_id>/graph.onnx   the exported graph
    artifacts/<env>/<cell_id>/manifest.json

Torch-free and Python 3.8: it runs in every export and runtime environment.
"""

from __future__ import annotations

import collections
import gzip
import hashlib
import json
import os
import shutil
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence, Tuple

import numpy as np

from harness.judge.wire import fields

ARTIFACT_SCHEMA = 1
MANIFEST = "manifest.json"
GRAPH = "graph.onnx"


class ArtifactError(ValueError):
    """A folder under artifacts/ that is not an artifact this harness can read."""


@dataclass(frozen=True)
class Sample:
    """One input set the graph was judged on, and the stage that judges it (parity, or dynamic for other shapes)."""

    label: str  # "export shape", "input variant 1", "shape {'N': 1}"
    stage: str
    inputs: Tuple[str, ...]  # array digests, in the graph's input order
    outputs: Tuple[str, ...]  # the reference's outputs (float32 eager PyTorch), flattened


@dataclass(frozen=True)
class Manifest:
    """What a replay needs to judge a stored graph as its exporting cell did."""

    env: str
    cell_id: str
    record: Dict[str, Any]  # the exporting cell's record as of its export (CellRecord.to_json())
    input_names: Tuple[str, ...]
    atol: float
    rtol: float
    samples: Tuple[Sample, ...]
    graph: str  # sha256 of graph.onnx
    precision: str = "fp32"  # fp16, int8-dynamic, int8-static: a graph converted from the fp32 one
    converter: str = ""  # what converted it, with its version ("onnxconverter-common 1.16.0")
    source: str = ""  # the digest of the fp32 graph's manifest it was converted from
    schema_version: int = ARTIFACT_SCHEMA

    @property
    def tags(self) -> Tuple[str, ...]:
        """Its case's tags, as the exporting cell recorded them."""
        return tuple(self.record.get("tags") or ())

    @property
    def digest(self) -> str:
        """Names this graph with these samples and tolerance: what a replay's resume key holds on to."""
        samples = [asdict(s) for s in self.samples]
        body = json.dumps([self.graph, self.atol, self.rtol, samples, self.precision, self.converter], sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any, where: str) -> Manifest:
        if not isinstance(data, dict) or data.get("schema_version") != ARTIFACT_SCHEMA:
            raise ArtifactError(f"{where}: not an artifact manifest of schema {ARTIFACT_SCHEMA}; export it again")
        try:
            samples = tuple(
                Sample(s["label"], s["stage"], tuple(s["inputs"]), tuple(s["outputs"])) for s in data["samples"]
            )
            return cls(
                env=data["env"],
                cell_id=data["cell_id"],
                record=dict(data["record"]),
                input_names=tuple(data["input_names"]),
                atol=float(data["atol"]),
                rtol=float(data["rtol"]),
                samples=samples,
                graph=data["graph"],
                precision=str(data.get("precision", "fp32")),
                converter=str(data.get("converter", "")),
                source=str(data.get("source", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ArtifactError(
                f"{where}: a malformed manifest ({type(exc).__name__}: {exc}); export it again"
            ) from None


class ArtifactStore:
    """The artifacts folder of a run (or of many machines' runs merged: the arrays are content-addressed)."""

    CACHE_BYTES = 256 << 20  # arrays kept decompressed: the inputs many graphs share are read once per replay

    def __init__(self, root: Path) -> None:
        self.root = Path(root).absolute()  # a converter runs in a scratch working directory (convert.scratch_cwd)
        self._cache: collections.OrderedDict[str, np.ndarray] = collections.OrderedDict()
        self._cached_bytes = 0

    def folder(self, env: str, cell_id: str, precision: str = "fp32") -> Path:
        """A cell's folder holds its fp32 graph; each conversion of it lives in a subfolder named by precision."""
        cell = self.root / env / cell_id
        return cell if precision == "fp32" else cell / precision

    def array_path(self, digest: str) -> Path:
        return self.root / "arrays" / f"{digest}.npy.gz"

    # Writing (the worker) ------------------------------------------------------------------------------

    def put_array(self, array: np.ndarray) -> str:
        array = np.ascontiguousarray(array)
        head = f"{array.dtype.str}{array.shape}".encode()
        digest = hashlib.sha256(head + array.tobytes()).hexdigest()[:24]
        path = self.array_path(digest)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{digest}.{uuid.uuid4().hex[:8]}.tmp")
            with gzip.open(tmp, "wb", compresslevel=1) as fh:  # level 1: most of the gain, little of the time
                np.save(fh, array, allow_pickle=False)
            os.replace(tmp, path)
        return digest

    def discard(self, env: str, cell_id: str, precision: str = "fp32") -> None:
        """A cell run again keeps no graph of an earlier run (its export may fail now); nor a conversion made again
        (its converter may fail now, or write another graph)."""
        shutil.rmtree(self.folder(env, cell_id, precision), ignore_errors=True)

    def write(self, manifest: Manifest, graph: bytes) -> None:
        """The graph and its manifest, whole or not at all: a replay never finds half a folder."""
        final = self.folder(manifest.env, manifest.cell_id, manifest.precision)
        tmp = final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}.tmp")
        tmp.mkdir(parents=True)
        (tmp / GRAPH).write_bytes(graph)
        (tmp / MANIFEST).write_text(json.dumps(manifest.to_json(), sort_keys=True), encoding="utf-8")
        if manifest.precision == "fp32":
            self.discard(manifest.env, manifest.cell_id)  # a new export: its conversions go with the old graph
        else:
            shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)

    # Reading (the replay, resume) ----------------------------------------------------------------------

    def has(self, env: str, cell_id: str, precision: str = "fp32") -> bool:
        return (self.folder(env, cell_id, precision) / MANIFEST).is_file()

    def manifests(self) -> Iterator[Path]:
        """Every manifest under the folder (fp32 graphs and their conversions), in a stable order."""
        if self.root.is_dir():
            yield from sorted([*self.root.glob(f"*/*/{MANIFEST}"), *self.root.glob(f"*/*/*/{MANIFEST}")])

    def read(self, path: Path) -> Manifest:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ArtifactError(f"{path}: unreadable ({exc}); export it again") from None
        return Manifest.from_json(data, str(path))

    def graph_path(self, manifest: Manifest) -> Path:
        return self.folder(manifest.env, manifest.cell_id, manifest.precision) / GRAPH

    def array(self, digest: str) -> np.ndarray:
        """The stored array (read-only: it may be shared with the next caller)."""
        if digest in self._cache:
            self._cache.move_to_end(digest)
            return self._cache[digest]
        with gzip.open(self.array_path(digest), "rb") as fh:
            array = np.load(fh, allow_pickle=False)
        array.flags.writeable = False
        self._cache[digest] = array
        self._cached_bytes += array.nbytes
        while self._cached_bytes > self.CACHE_BYTES and len(self._cache) > 1:
            _, dropped = self._cache.popitem(last=False)
            self._cached_bytes -= dropped.nbytes
        return array

    def arrays(self, digests: Sequence[str]) -> List[np.ndarray]:
        return [self.array(d) for d in digests]

    def samples_of(self, manifest: Manifest) -> Dict[str, np.ndarray]:
        """Every array of a graph's samples (inputs and reference outputs), by digest."""
        return {d: self.array(d) for s in manifest.samples for d in s.inputs + s.outputs}

    def remember(self, arrays: Dict[str, np.ndarray]) -> ArtifactStore:
        """This store, holding `arrays` as if it had read them (a zygote's child, sent them by its worker)."""
        for digest, array in arrays.items():
            if digest not in self._cache:
                self._cache[digest] = array
                self._cached_bytes += array.nbytes
        return self


def graph_digest(graph: bytes) -> str:
    return hashlib.sha256(graph).hexdigest()


# ModelProto's producer_name and producer_version (onnx.proto): the exporter's name and release, nothing it computes
_PRODUCER_FIELDS = (2, 3)


def content_digest(graph: bytes) -> str:
    """sha256 of the model but for the exporter's name and version: two releases of an exporter that write the same
    graph write the same content (torch 2.13 and 2.15's TorchScript exporter, most often)."""
    digest = hashlib.sha256()
    for number, _, _, raw in fields(graph):
        if number not in _PRODUCER_FIELDS:
            digest.update(raw)
    return digest.hexdigest()


def folder_bytes(path: Path) -> Tuple[int, int]:
    """Files and bytes under a folder (0, 0 when there is none)."""
    files = size = 0
    for dirpath, _, names in os.walk(path):
        for name in names:
            files += 1
            size += os.path.getsize(os.path.join(dirpath, name))
    return files, size
