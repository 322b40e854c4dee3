"""The data the page's script draws the matrix, the cell details and the upgrade view from.

Compact on purpose, since a page holds thousands of cells: each cell is a short array of indices into shared
lists, and repeated error messages and fingerprints are stored once.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pandas as pd

from harness.report.upgrade import Side, UpgradeDiff
from harness.report.vocab import (
    CELL_DIMS,
    DIM_LABEL,
    PIVOTS,
    PORTABILITY_LABEL,
    VERDICTS,
    family_sort_key,
    natural_key,
    params_key,
    params_label,
    portability_label,
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
    rows = set(zip(frame["case"], frame["params"], frame["strategy"]))
    return sorted(
        rows,
        key=lambda r: (
            family_sort_key(family[r[0]]),
            r[0],
            strategy_sort_key(r[2], portability[(r[0], r[2])]),
            natural_key(labels[(r[0], r[1])]),
            r[1],
        ),
    )


def _portability(frame: pd.DataFrame) -> Dict[Tuple[str, str], str]:
    return dict(zip(zip(frame["case"], frame["strategy"]), frame["portability"]))


def row_labels(records: Sequence[Mapping[str, Any]]) -> Dict[Tuple[str, str], str]:
    """The compact label of each (case, params): only the parameters that vary within the case."""
    by_case: Dict[str, Dict[str, Mapping[str, Any]]] = {}
    for record in records:
        by_case.setdefault(record["case"], {})[params_key(record["params"])] = record["params"]
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


def _dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


def _number(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def detail(record: Mapping[str, Any], strings: _Interned, fingerprints: _Interned) -> Dict[str, Any]:
    """Everything the details panel shows for one cell."""
    stages = []
    for stage in _list(record.get("stages")):
        if not isinstance(stage, dict):
            continue
        message = _message(stage.get("message"))
        stages.append(
            [
                str(stage.get("name", "?")),
                str(stage.get("outcome", "?")),
                _number(stage.get("seconds")),
                stage.get("error_type"),
                None if message is None else strings.add(message),
            ]
        )
    latency = {
        str(t): [_number(m.get(k)) for k in ("median_s", "iqr_s", "samples", "threads")] + [bool(m.get("noisy"))]
        for t, m in _dict(record.get("latency")).items()
        if isinstance(m, dict)
    }
    memory = {
        str(t): [_number(m.get("peak_bytes")), m.get("method")]
        for t, m in _dict(record.get("memory")).items()
        if isinstance(m, dict)
    }
    export: Optional[Dict[str, Any]] = _dict(record.get("export")) or None
    if export is not None:
        ops = _dict(export.get("op_types"))
        export = {
            "nodes": _number(export.get("nodes")),
            "bytes": _number(export.get("bytes")),
            "domains": [str(d) for d in _list(export.get("domains"))],
            "ops": sorted(([str(k), _number(v)] for k, v in ops.items()), key=lambda kv: -(kv[1] or 0))[:12],
        }
    parity = _dict(record.get("parity"))
    return {
        "st": stages,
        "ao": _number(record.get("actual_opset")),
        "r": None if record.get("reason") is None else strings.add(_message(record.get("reason"))),
        "p": {k: _number(parity.get(k)) for k in PARITY_KEYS} if parity else None,
        "l": latency,
        "m": memory,
        "x": export,
        "f": fingerprints.add(_dict(record.get("fingerprint"))),
        "t": [record.get("started_at"), record.get("finished_at"), _number(record.get("wall_s"))],
        "id": [record.get("run_id"), record.get("cell_id"), record.get("harness_version")],
        "tags": [str(t) for t in _list(record.get("tags"))],
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
    records: Sequence[Mapping[str, Any]],
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
        "portability": PORTABILITY_LABEL,
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
