"""The data the page's script draws the matrix, the cell details and the upgrade view from.

Compact on purpose, since a page holds thousands of cells: each cell is a short array of indices into shared
lists, and repeated error messages and fingerprints are stored once.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pandas as pd

from harness.record import PORTABILITY_LABELS, PORTABILITY_SHORT, CellRecord, Fingerprint, portability_label
from harness.report.upgrade import Side, UpgradeDiff
from harness.report.vocab import (
    CELL_DIMS,
    DIM_LABEL,
    FINGERPRINT_COLUMNS,
    PIVOTS,
    VERDICTS,
    family_sort_key,
    natural_key,
    params_label,
    strategy_sort_key,
    varying_keys,
)

PARITY_KEYS = ("max_abs", "max_rel", "atol", "rtol", "min_passing_atol", "shapes_checked")
MAX_MESSAGE = 8000  # characters of one error message kept on the page; results.json keeps them whole


class _Interned:
    """A list of distinct values, each referred to by its position."""

    def __init__(self) -> None:
        self.values: List[Any] = []
        self._index: Dict[str, int] = {}

    def add(self, value: Any) -> int:
        key = json.dumps(value, sort_keys=True, default=str)
        if key not in self._index:
            self._index[key] = len(self.values)
            self.values.append(value)
        return self._index[key]


def row_order(frame: pd.DataFrame, labels: Mapping[Tuple[str, str], str]) -> List[Tuple[str, str, str]]:
    """Rows (case, params, strategy): by family and case, then strategy, then the parameters' label.

    Sorting by label rather than by first appearance keeps the order independent of which file was read first.
    """
    portability = _portability(frame)
    family = dict(zip(frame["case"], frame["family"]))
    references = set(zip(frame["case"], frame["reference"]))
    rows = set(zip(frame["case"], frame["params"], frame["strategy"]))
    return sorted(
        rows,
        key=lambda r: (
            family_sort_key(family[r[0]]),
            r[0],
            strategy_sort_key(r[2], portability[(r[0], r[2])], (r[0], r[2]) in references),
            natural_key(labels[(r[0], r[1])]),
            r[1],
        ),
    )


def _portability(frame: pd.DataFrame) -> Dict[Tuple[str, str], str]:
    return dict(zip(zip(frame["case"], frame["strategy"]), frame["portability"]))


def row_labels(records: Sequence[CellRecord]) -> Dict[Tuple[str, str], str]:
    """The compact label of each (case, params): only the parameters that vary within the case."""
    by_case: Dict[str, Dict[str, Mapping[str, Any]]] = {}
    for record in records:
        by_case.setdefault(record.case, {})[record.params_key] = record.params
    labels = {}
    for case, params in by_case.items():
        shown = varying_keys(list(params.values()))
        for key, value in params.items():
            labels[(case, key)] = params_label(value, shown)
    return labels


def _message(text: Any) -> Optional[str]:
    if text is None:
        return None
    text = str(text)
    return (
        text
        if len(text) <= MAX_MESSAGE
        else text[:MAX_MESSAGE] + f" … ({len(text) - MAX_MESSAGE} more characters in results.json)"
    )


def _number(value: Any) -> Any:
    # The page's script does arithmetic on these: anything else a file holds there is shown as unknown.
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def fingerprint_shown(fingerprint: Fingerprint) -> Dict[str, Any]:
    """The fingerprint as the details panel lists it: the contract's keys, then whatever else was recorded."""
    data = fingerprint.to_json()
    data["ort_providers"] = ", ".join(data["ort_providers"]) or None
    shown = {k: data[k] for k in FINGERPRINT_COLUMNS}
    shown.update((k, v) for k, v in data.items() if k not in shown and v is not None)
    return shown


def detail(record: CellRecord, strings: _Interned, fingerprints: _Interned) -> Dict[str, Any]:
    """Everything the details panel shows for one cell."""
    stages = [
        [
            s.name,
            s.outcome,
            _number(s.seconds),
            s.error_type,
            None if s.message is None else strings.add(_message(s.message)),
        ]
        for s in record.stages
    ]
    latency = {
        t: [_number(m.median_s), _number(m.iqr_s), _number(m.samples), _number(m.threads), bool(m.noisy)]
        for t, m in record.latency.items()
    }
    memory = {t: [_number(m.peak_bytes), m.method] for t, m in record.memory.items()}
    export: Optional[Dict[str, Any]] = None
    if record.export is not None:
        ops = sorted(([str(k), _number(v)] for k, v in record.export.op_types.items()), key=lambda kv: -(kv[1] or 0))
        export = {
            "nodes": _number(record.export.nodes),
            "bytes": _number(record.export.bytes),
            "domains": [str(d) for d in record.export.domains],
            "ops": ops[:12],
        }
    parity = record.parity
    return {
        "st": stages,
        "ao": _number(record.actual_opset),
        "r": None if record.reason is None else strings.add(_message(record.reason)),
        "p": {k: _number(getattr(parity, k)) for k in PARITY_KEYS} if parity else None,
        "l": latency,
        "m": memory,
        "x": export,
        "f": fingerprints.add(fingerprint_shown(record.fingerprint)),
        "t": [record.started_at, record.finished_at, _number(record.wall_s)],
        "id": [record.run_id, record.cell_id, record.harness_version],
        "tags": list(record.tags),
    }


def _dim_values(frame: pd.DataFrame, envs: Sequence[str]) -> Dict[str, List[Any]]:
    values: Dict[str, List[Any]] = {"env": list(envs)}
    for dim in CELL_DIMS[1:]:
        values[dim] = sorted(set(frame[dim].tolist()), key=lambda v: (isinstance(v, str), v))
    return values


def _side(side: Side) -> List[Any]:
    """[text, portability, passed, counted] for a pick, [text] otherwise."""
    c = side.pick
    return [side.text] if c is None else [c.name, c.portability, c.passed, c.counted]


def _upgrade_entry(d: UpgradeDiff) -> Dict[str, Any]:
    return {
        "counts": d.counts,
        "gains": list(d.gains),
        "switches": [[s.family, s.opset, s.device, _side(s.old), _side(s.new), s.changed, s.gain] for s in d.switches],
        "changes": [[c.kind, c.old_idx, c.new_idx, None if c.ratio is None else round(c.ratio, 4)] for c in d.changes],
    }


def _upgrade(pairs: Mapping[Tuple[str, str], UpgradeDiff]) -> Dict[str, Dict[str, Any]]:
    nested: Dict[str, Dict[str, Any]] = {}
    for (old, new), d in pairs.items():
        nested.setdefault(old, {})[new] = _upgrade_entry(d)
    return nested


def payload(
    frame: pd.DataFrame,
    records: Sequence[CellRecord],
    envs: Sequence[str],
    pairs: Mapping[Tuple[str, str], UpgradeDiff],
) -> Dict[str, Any]:
    """The page's embedded data: dimensions, rows, cells, details and the precomputed upgrade pairs."""
    labels = row_labels(records)
    rows = row_order(frame, labels)
    row_index = {row: i for i, row in enumerate(rows)}
    dims = _dim_values(frame, envs)
    dim_index = {dim: {v: i for i, v in enumerate(values)} for dim, values in dims.items()}
    verdict_index = {v.name: i for i, v in enumerate(VERDICTS)}
    strings, fingerprints = _Interned(), _Interned()
    family_of = dict(zip(frame["case"], frame["family"]))
    portability_of = _portability(frame)
    cells, details = [], []
    for record, row in zip(records, frame.itertuples(index=False)):
        cells.append(
            [row_index[(row.case, row.params, row.strategy)]]
            + [dim_index[dim][getattr(row, dim)] for dim in CELL_DIMS]
            + [verdict_index[row.verdict]]
        )
        details.append(detail(record, strings, fingerprints))
    return {
        "dims": dims,
        "dimLabels": DIM_LABEL,
        "cellDims": list(CELL_DIMS),
        "pivots": [[label, list(axes)] for label, axes in PIVOTS],
        "verdicts": [[v.name, v.glyph, v.label, v.meaning] for v in VERDICTS],
        "portability": {p.value: label for p, label in PORTABILITY_LABELS.items()},
        "portabilityShort": {p.value: short for p, short in PORTABILITY_SHORT.items()},
        "rows": [
            [
                family_of[case],
                case,
                strategy,
                portability_of[(case, strategy)],
                labels[(case, params)],
                json.dumps(json.loads(params), separators=(", ", ": ")),
                portability_label(portability_of[(case, strategy)]),
            ]
            for case, params, strategy in rows
        ],
        "cells": cells,
        "details": details,
        "strings": strings.values,
        "fingerprints": fingerprints.values,
        "upgrade": _upgrade(pairs),
    }


def dumps_lines(data: Mapping[str, Any], dumps: Any) -> str:
    """One top-level key per line and one list item per line for the long lists: readable golden diffs."""
    parts = []
    for key, value in data.items():
        if key in ("cells", "details") and isinstance(value, list):
            inner = ",\n".join(dumps(item) for item in value)
            parts.append(f"{dumps(key)}:[\n{inner}]")
        else:
            parts.append(f"{dumps(key)}:{dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}"
