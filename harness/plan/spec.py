"""Cells: one (environment, case, params, strategy, opset, exporter, shape mode, device, dtype), and their expansion."""

from __future__ import annotations

import hashlib
import itertools
import json
import zlib
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from harness.plan.registry import Case
from harness.record import CellRecord, Fingerprint, Runtime, Verdict, canonical_params

# A case's opsets unless it names its own, the newest added: where the default cases' operators change (9 the
# oldest; Clip's and Pad's bounds become inputs at 11, Squeeze's and Unsqueeze's axes at 13; GridSample at 16).
# Opset 17 brings LayerNormalization, which the cases that meet it name; for the default cases (grid_sample_op, stn)
# every one of 2499 records at 17 had the verdict of its twin at 16 (2026-12-01).
DEFAULT_OPSETS = (9, 11, 13, 16)


@dataclass(frozen=True)
class CellSpec:
    """What one cell measures; frozen and hashable, the key for resume and merge."""

    env: str
    family: str
    case: str
    params_json: str
    strategy: str
    opset: int
    exporter: str
    shape_mode: str
    device: str
    dtype: str

    @property
    def params(self) -> Dict[str, Any]:
        return json.loads(self.params_json)

    @property
    def cell_id(self) -> str:
        blob = json.dumps(asdict(self), sort_keys=True).encode()
        return hashlib.sha1(blob).hexdigest()[:16]

    @property
    def seed(self) -> int:
        return zlib.crc32(f"{self.case}|{self.params_json}".encode()) & 0x7FFFFFFF

    def label(self) -> str:
        params = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return (
            f"{self.case}[{params}] {self.strategy} opset{self.opset} {self.exporter} "
            f"{self.shape_mode} {self.device}/{self.dtype}"
        )

    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        data["params"] = data.pop("params_json")
        data["params"] = self.params
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> CellSpec:
        fields = dict(data)
        fields["params_json"] = canonical_params(fields.pop("params"))
        return cls(**{k: fields[k] for k in cls.__dataclass_fields__})

    def record(
        self,
        fingerprint: Fingerprint,
        verdict: Verdict,
        *,
        reference: str,
        portability: str,
        tags: Sequence[str],
        operators: Sequence[str] = (),
        reason: Optional[str] = None,
    ) -> CellRecord:
        """A record of this cell with its identity filled in; the pipeline or the run adds what it found."""
        return CellRecord(
            env=self.env,
            family=self.family,
            case=self.case,
            params=self.params,
            strategy=self.strategy,
            opset=self.opset,
            exporter=self.exporter,
            shape_mode=self.shape_mode,
            device=self.device,
            dtype=self.dtype,
            verdict=verdict,
            reason=reason,
            finished_at="",
            reference=reference,
            operators={self.family: self.strategy, **{f: str(self.params[f]) for f in operators}} if operators else {},
            runtime=Runtime("onnxruntime", fingerprint.onnxruntime),
            portability=portability,
            tags=tuple(tags),
            fingerprint=fingerprint,
            fingerprint_hash=fingerprint.hash(),
            cell_id=self.cell_id,
        )


@dataclass(frozen=True)
class Selection:
    """What the user asked for on the command line; empty tuples mean 'everything by default'."""

    cases: Tuple[str, ...] = ()
    families: Tuple[str, ...] = ()
    strategies: Tuple[str, ...] = ()
    opsets: Tuple[int, ...] = ()
    exporters: Tuple[str, ...] = ()
    shape_modes: Tuple[str, ...] = ()
    devices: Tuple[str, ...] = ("cpu",)
    dtypes: Tuple[str, ...] = ("float32",)
    tags: Tuple[str, ...] = ()


def default_opsets(max_opset: int) -> Tuple[int, ...]:
    return tuple(sorted(set(DEFAULT_OPSETS) | {max_opset}))


def expand(
    env: str, cases: Iterable[Case], strategies_of: Callable[[str], List[str]], selection: Selection, max_opset: int
) -> Iterator[CellSpec]:
    """Every cell the selection names, in a stable order (the shard split depends on it)."""
    for case in cases:
        if not _selected(case, selection):
            continue
        strategies = [
            n
            for n in strategies_of(case.family)
            if (not selection.strategies or n in selection.strategies) and (not case.strategies or n in case.strategies)
        ]
        exporters = [e for e in case.exporters if not selection.exporters or e in selection.exporters]
        modes = [m for m in case.shape_modes if not selection.shape_modes or m in selection.shape_modes]
        axes = itertools.product(
            case.params,
            strategies,
            _opsets(case, selection, max_opset),
            exporters,
            modes,
            selection.devices,
            selection.dtypes,
        )
        for params, strategy, opset, exporter, shape_mode, device, dtype in axes:
            yield CellSpec(
                env,
                case.family,
                case.name,
                canonical_params(params),
                strategy,
                opset,
                exporter,
                shape_mode,
                device,
                dtype,
            )


def _selected(case: Case, selection: Selection) -> bool:
    return (
        (not selection.cases or case.name in selection.cases)
        and (not selection.families or case.family in selection.families)
        and (not selection.tags or bool(set(selection.tags) & set(case.tags)))
    )


def _opsets(case: Case, selection: Selection, max_opset: int) -> List[int]:
    """The opsets asked for; else the case's own and the newest; else the defaults and the newest."""
    if selection.opsets:
        return list(selection.opsets)
    if case.opsets:
        return sorted(set(case.opsets) | {max_opset})
    return list(default_opsets(max_opset))
