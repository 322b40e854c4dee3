"""Cells: one (environment, case, params, strategy, opset, exporter, shape mode, device, dtype), and their expansion."""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from harness.errors import UserError
from harness.registry import Case

DEFAULT_OPSETS = (9, 11, 13, 16, 17)
DTYPES = ("float32", "float16", "bfloat16", "float64")
DEVICES = ("cpu", "cuda")


def canonical_params(params: Dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


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
    env: str, cases: Sequence[Case], strategies_of: Any, selection: Selection, max_opset: int
) -> Iterator[CellSpec]:
    """Every cell the selection names, in a stable order (the shard split depends on it)."""
    opsets = selection.opsets or default_opsets(max_opset)
    for case in cases:
        if selection.cases and case.name not in selection.cases:
            continue
        if selection.families and case.family not in selection.families:
            continue
        if selection.tags and not set(selection.tags) & set(case.tags):
            continue
        if selection.opsets:
            case_opsets = list(selection.opsets)
        elif case.opsets:
            case_opsets = sorted(set(case.opsets) | {max_opset})
        else:
            case_opsets = list(opsets)
        for params in case.params:
            for strategy in strategies_of(case.family):
                if selection.strategies and strategy.name not in selection.strategies:
                    continue
                for opset in case_opsets:
                    for exporter in case.exporters:
                        if selection.exporters and exporter not in selection.exporters:
                            continue
                        for shape_mode in case.shape_modes:
                            if selection.shape_modes and shape_mode not in selection.shape_modes:
                                continue
                            for device in selection.devices:
                                for dtype in selection.dtypes:
                                    yield CellSpec(
                                        env=env,
                                        family=case.family,
                                        case=case.name,
                                        params_json=canonical_params(params),
                                        strategy=strategy.name,
                                        opset=opset,
                                        exporter=exporter,
                                        shape_mode=shape_mode,
                                        device=device,
                                        dtype=dtype,
                                    )


def parse_shard(text: Optional[str]) -> Optional[Tuple[int, int]]:
    if not text:
        return None
    try:
        index, count = (int(x) for x in text.split("/"))
    except ValueError:
        raise UserError(f"--shard {text}: expected I/N with 1 <= I <= N, for example --shard 2/4") from None
    if not 1 <= index <= count:
        raise UserError(f"--shard {text}: expected I/N with 1 <= I <= N, for example --shard 2/4")
    return index, count


def in_shard(cell: CellSpec, shard: Optional[Tuple[int, int]]) -> bool:
    """Deterministic split by the cell's own id, so every machine agrees without talking."""
    if shard is None:
        return True
    index, count = shard
    return int(cell.cell_id, 16) % count == index - 1


def select_list(cells: List[CellSpec], shard: Optional[Tuple[int, int]]) -> List[CellSpec]:
    return [c for c in cells if in_shard(c, shard)]
