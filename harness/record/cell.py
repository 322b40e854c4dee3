"""One record per cell: the contract between the runner, which writes it, and the reporter, which reads it.

`CellRecord.to_json()` writes a record and `CellRecord.from_json()` reads one, older schemas through migrations.py.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Callable, Dict, Optional, Tuple

from harness.record.divergence import Divergence
from harness.record.fingerprint import Fingerprint
from harness.record.migrations import MIGRATIONS, migrate
from harness.record.terms import SCHEMA_VERSION, RecordKind, Verdict, canonical_params, clean


class RecordError(ValueError):
    """A JSON object that is not a cell record this harness can read: of another schema, foreign, or malformed."""

    def __init__(self, reason: str, kind: str = "foreign") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind  # schema, foreign, malformed


@dataclass(frozen=True)
class Stage:
    name: str
    outcome: str  # ok, failed, skipped
    error_type: Optional[str] = None
    message: Optional[str] = None
    seconds: float = 0.0


@dataclass(frozen=True)
class Parity:
    """How far outputs were from the eager reference; None where a difference was not finite."""

    max_abs: Optional[float]
    max_rel: Optional[float]
    atol: float
    rtol: float
    min_passing_atol: Optional[float]
    note: Optional[str] = None
    shapes_checked: Optional[int] = None
    mean_abs: Optional[float] = None  # mean absolute error over every output element
    psnr: Optional[float] = None  # dB over the reference's range, for image-like (4-D) outputs
    p99_abs: Optional[float] = None  # the 99th percentile of the absolute error over every output element


@dataclass(frozen=True)
class Timing:
    """Per-call seconds of one measured target (eager, ort, reference)."""

    median_s: float
    iqr_s: float
    samples: int
    threads: int
    noisy: bool
    number: Optional[int] = None  # calls per timed block (records before 0.2 did not say)


WORKING_SET = ".working_set"  # a memory key's suffix: `<target>.working_set` beside the target's footprint


@dataclass(frozen=True)
class Peak:
    """Memory of one target, and how it was taken: under the target's own name its footprint (a session's
    resident-set growth from before its creation through its first run; eager's parameters plus one call's
    growth), under `<target>.working_set` one run's own growth (a session's with its arena off)."""

    peak_bytes: Optional[int]
    method: str


@dataclass(frozen=True)
class ExportInfo:
    nodes: int
    op_types: Dict[str, int]
    domains: Tuple[str, ...]
    bytes: int


@dataclass(frozen=True)
class Runtime:
    """What judged the exported graph: the exporting environment's onnxruntime, or the runtime environment a
    replay ran in (`env` names it; None for the exporting environment itself). A conversion's record names the
    converter environment's onnxruntime here; its `kind` says that no runtime judged it."""

    name: str  # onnxruntime, openvino
    version: Optional[str]
    env: Optional[str] = None
    python: Optional[str] = None
    platform: Optional[str] = None
    providers: Tuple[str, ...] = ()  # onnxruntime's execution providers, OpenVINO's device

    @property
    def label(self) -> str:
        """How the page names it: "onnxruntime 1.14.1"; an exporting cell and a replay of one version agree."""
        return f"{self.name} {self.version}" if self.version else self.name


@dataclass(frozen=True)
class CellRecord:
    # what the cell is
    env: str
    family: str
    case: str
    params: Dict[str, Any]
    strategy: str
    opset: int
    exporter: str
    shape_mode: str
    device: str
    dtype: str
    # what happened
    verdict: Verdict
    finished_at: str
    reason: Optional[str] = None
    stages: Tuple[Stage, ...] = ()
    actual_opset: Optional[int] = None
    parity: Optional[Parity] = None
    eager_parity: Optional[Parity] = None
    latency: Dict[str, Timing] = field(default_factory=dict)
    memory: Dict[str, Peak] = field(default_factory=dict)
    export: Optional[ExportInfo] = None
    ort_providers: Tuple[str, ...] = ()
    ort_placement: Optional[Dict[str, Any]] = None
    traceback: Optional[str] = None
    # what judged it, and against what
    reference: str = ""
    operators: Dict[str, str] = field(default_factory=dict)  # family -> strategy, for models of several operators
    runtime: Runtime = Runtime("onnxruntime", None)
    precision: str = "fp32"
    converter: str = ""  # what made a converted graph (fp16, int8) from the exported one, with its version
    recipe: Optional[Dict[str, Any]] = None  # a searched recipe: the nodes kept float, its budget, what it reached
    runtime_settings: Dict[str, str] = field(default_factory=dict)  # what the runtime chose ("inference_precision")
    artifact: str = ""  # digest of the stored graph and its samples (harness.artifacts), "" when none was kept
    judged_with: str = ""  # the job judged on its behalf: the same graph, inputs and tolerance (campaign.chain.share)
    portability: str = "standard"
    tags: Tuple[str, ...] = ()
    # what kind of job wrote it, where and when
    kind: str = RecordKind.EXPORT.value  # export, replay, conversion, search, trace, divergence (RecordKind)
    divergence: Optional[Divergence] = None  # a divergence record's finding; None for every other kind
    fingerprint: Fingerprint = Fingerprint()  # the exporting environment's, for a replay or a conversion too
    runtime_fingerprint: Optional[Fingerprint] = None  # the runtime or converter environment's; None for an export
    fingerprint_hash: str = ""
    env_limits: Dict[str, str] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    harness_version: str = ""
    code_hash: str = ""
    run_id: str = ""
    cell_id: str = ""
    started_at: str = ""
    wall_s: float = 0.0

    @property
    def params_key(self) -> str:
        return canonical_params(self.params)

    def key(self) -> Tuple[Any, ...]:
        """The cell's identity across files: what a newer record of the same cell supersedes. A conversion's record
        and a replay's of the same graph differ by their kind (both name onnxruntime 1.32, say)."""
        return (
            self.kind,
            self.env,
            self.case,
            self.params_key,
            self.strategy,
            self.opset,
            self.exporter,
            self.shape_mode,
            self.device,
            self.dtype,
            self.runtime.name,
            self.runtime.version,
            self.precision,
        )

    def failed_stage(self) -> Optional[Stage]:
        """The first failed stage: the one that names the verdict."""
        return next((s for s in self.stages if s.outcome == "failed"), None)

    def to_json(self) -> Dict[str, Any]:
        data = clean(asdict(self))
        data["fingerprint"] = self.fingerprint.to_json()
        if self.runtime_fingerprint is not None:
            data["runtime_fingerprint"] = self.runtime_fingerprint.to_json()
        return data

    def to_line(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, allow_nan=False)

    @classmethod
    def from_json(cls, data: Any) -> CellRecord:
        """A record from its JSON object, migrated from an older schema; RecordError when it is none of ours."""
        migrated = migrate(_checked(data))
        try:
            return _typed(migrated)
        except RecordError:
            raise
        except (TypeError, ValueError, AttributeError) as exc:
            raise RecordError(f"a malformed record ({type(exc).__name__}: {exc})"[:200], kind="malformed") from None

    def with_(self, **changes: Any) -> CellRecord:
        return replace(self, **changes)


# Reading ----------------------------------------------------------------------------------------------

REQUIRED: Tuple[Tuple[str, type], ...] = (
    ("env", str),
    ("family", str),
    ("case", str),
    ("params", dict),
    ("strategy", str),
    ("opset", int),
    ("exporter", str),
    ("shape_mode", str),
    ("device", str),
    ("dtype", str),
    ("verdict", str),
    ("finished_at", str),
)
_VERDICTS = {v.value for v in Verdict}
_KINDS = {k.value for k in RecordKind}


def _checked(data: Any) -> Dict[str, Any]:
    if not isinstance(data, dict):
        raise RecordError(f"a JSON {type(data).__name__} instead of an object")
    version = data.get("schema_version")
    if version not in MIGRATIONS and version != SCHEMA_VERSION or isinstance(version, bool):
        raise RecordError(
            f"schema_version {json.dumps(version)} is not readable by this harness "
            f"(reads {', '.join(map(str, sorted(MIGRATIONS)))} and {SCHEMA_VERSION})",
            kind="schema",
        )
    missing = [k for k, _ in REQUIRED if data.get(k) is None]
    if missing:
        raise RecordError("missing required keys: " + ", ".join(missing))
    for key, kind in REQUIRED:
        value = data[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise RecordError(f"key {key!r} should be {kind.__name__}, got {json.dumps(value)[:40]}", kind="malformed")
    if data["verdict"] not in _VERDICTS:
        raise RecordError("unknown verdict " + json.dumps(data["verdict"])[:40], kind="malformed")
    if data.get("kind", RecordKind.EXPORT.value) not in _KINDS:
        raise RecordError("unknown record kind " + json.dumps(data["kind"])[:40], kind="malformed")
    return data


# The JSON shape of each optional key, checked before typing it: a record edited by hand is refused, not misread.
SHAPES: Tuple[Tuple[str, type], ...] = (
    ("stages", list),
    ("tags", list),
    ("ort_providers", list),
    ("env_limits", dict),
    ("operators", dict),
    ("fingerprint", dict),
    ("runtime_fingerprint", dict),
    ("latency", dict),
    ("memory", dict),
    ("parity", dict),
    ("eager_parity", dict),
    ("export", dict),
    ("runtime", dict),
    ("recipe", dict),
    ("runtime_settings", dict),
    ("divergence", dict),
)


def _part(kind: Callable[..., Any], value: Any) -> Any:
    if not isinstance(value, dict):
        return None
    values = {}
    for name, annotation in _schema(kind):
        if name in value:
            values[name] = value[name]
            if not _fits(annotation, values[name]):
                raise RecordError(
                    f"{kind.__name__}.{name} {json.dumps(values[name])[:40]} is not {annotation}", "malformed"
                )
    try:
        return kind(**values)
    except TypeError as exc:
        raise RecordError(f"a malformed {kind.__name__}: {exc}", kind="malformed") from None


@functools.lru_cache(maxsize=None)
def _schema(kind: Callable[..., Any]) -> Tuple[Tuple[str, str], ...]:
    """A record part's fields and their annotations as written, read once per class (a page reads 50k records)."""
    return tuple((f.name, str(f.type)) for f in fields(kind))


def _fits(annotation: str, value: Any) -> bool:
    """Whether a JSON value fits a scalar field's annotation as written ("Optional[float]", "int", "bool", "str")."""
    optional = annotation.startswith("Optional[")
    base = annotation[len("Optional[") : -1] if optional else annotation
    if value is None:
        return optional
    if base == "bool":
        return isinstance(value, bool)
    if base in ("float", "int"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if base == "str":
        return isinstance(value, str)
    return True


def _targets(kind: Callable[..., Any], value: Any) -> Dict[str, Any]:
    parts = {str(t): _part(kind, v) for t, v in (value or {}).items()} if isinstance(value, dict) else {}
    return {t: p for t, p in parts.items() if p is not None}


def _runtime(value: Any) -> Runtime:
    if not isinstance(value, dict):
        return Runtime("onnxruntime", None)
    providers = value.get("providers") or []
    if not isinstance(providers, list) or not all(isinstance(p, str) for p in providers):
        raise RecordError("Runtime.providers should be a list of strings", kind="malformed")
    return _part(Runtime, dict(value, providers=tuple(providers)))


def _typed(data: Dict[str, Any]) -> CellRecord:
    for key, shape in SHAPES:
        if data.get(key) is not None and not isinstance(data[key], shape):
            raise RecordError(f"key {key!r} should be a JSON {shape.__name__}", kind="malformed")
    known = _schema(CellRecord)
    values = {k: data[k] for k, _ in known if k in data}
    export = data.get("export")
    values.update(
        verdict=Verdict(data["verdict"]),
        stages=tuple(s for s in (_part(Stage, s) for s in data.get("stages") or ()) if s is not None),
        parity=_part(Parity, data.get("parity")),
        eager_parity=_part(Parity, data.get("eager_parity")),
        latency=_targets(Timing, data.get("latency")),
        memory=_targets(Peak, data.get("memory")),
        export=None
        if not isinstance(export, dict)
        else _part(ExportInfo, dict(export, domains=tuple(export.get("domains") or ()))),
        runtime=_runtime(data.get("runtime")),
        divergence=_part(Divergence, data.get("divergence")),
        fingerprint=Fingerprint.from_json(data.get("fingerprint") or {}),
        runtime_fingerprint=None
        if data.get("runtime_fingerprint") is None
        else Fingerprint.from_json(data["runtime_fingerprint"]),
        tags=tuple(str(t) for t in data.get("tags") or ()),
        ort_providers=tuple(data.get("ort_providers") or ()),
        env_limits=dict(data.get("env_limits") or {}),
        operators=dict(data.get("operators") or {}),
        runtime_settings={str(k): str(v) for k, v in (data.get("runtime_settings") or {}).items()},
    )
    return CellRecord(**values)
