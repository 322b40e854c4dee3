"""The data the page's script draws the matrix, the cell details and the upgrade view from.

Compact on purpose, since a page holds thousands of cells: each cell is a short array of indices into shared
lists, and repeated error messages, fingerprints and runtimes are stored once.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pandas as pd

from harness.record import PORTABILITY_LABELS, PORTABILITY_SHORT, CellRecord, portability_label
from harness.report.changes import KINDS
from harness.report.details import Interned, detail, link_replays
from harness.report.runtimes import CELL, homes, ladder
from harness.report.table import EXPORT
from harness.report.upgrade import Side, UpgradeDiff
from harness.report.vocab import (
    CELL_DIMS,
    DIM_LABEL,
    PIVOTS,
    VERDICTS,
    family_sort_key,
    natural_key,
    params_label,
    precision_sort_key,
    strategy_sort_key,
    varying_keys,
)


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
    """The compact label of each (case, params): only the parameters that vary within the case, in the order the
    case gives them (as its exporting records keep them; a replay's file may hold them sorted)."""
    by_case: Dict[str, Dict[str, Mapping[str, Any]]] = {}
    replays = [r for r in records if r.kind != EXPORT]
    for record in [r for r in records if r.kind == EXPORT] + replays:
        by_case.setdefault(record.case, {}).setdefault(record.params_key, record.params)
    labels = {}
    for case, params in by_case.items():
        shown = varying_keys(list(params.values()))
        for key, value in params.items():
            labels[(case, key)] = params_label(value, shown)
    return labels


def _dim_values(frame: pd.DataFrame, envs: Sequence[str]) -> Dict[str, List[Any]]:
    values: Dict[str, List[Any]] = {"env": list(envs), "runtime": ladder(frame["runtime"])}
    values["precision"] = sorted(set(frame["precision"]), key=precision_sort_key)
    for dim in CELL_DIMS:
        if dim not in values:
            values[dim] = sorted(set(frame[dim].tolist()), key=lambda v: (isinstance(v, str), v))
    return values


def origins(frame: pd.DataFrame) -> List[Optional[int]]:
    """For each record, the exporting record of its cell (itself for an exporting one; None if not loaded)."""
    # a converted graph (fp16, int8) points at the fp32 graph it was converted from
    keys = list(zip(*(frame[c] for c in CELL if c != "precision")))
    own = frame["own"].astype(bool).tolist()
    exporting = {key: i for i, (key, is_own) in enumerate(zip(keys, own)) if is_own}
    return [exporting.get(key) for key in keys]


def _side(side: Side) -> List[Any]:
    """[text, portability, passed, counted] for a pick, [text] otherwise."""
    c = side.pick
    return [side.text] if c is None else [c.name, c.portability, c.passed, c.counted]


def _upgrade_entry(d: UpgradeDiff) -> Dict[str, Any]:
    return {
        "counts": d.counts,
        "gains": list(d.gains),
        "switches": [[s.family, s.opset, s.device, _side(s.old), _side(s.new), s.changed, s.gain] for s in d.switches],
        "groups": [
            [g.family, g.strategy, g.kind, [[c.old_idx, c.new_idx, _round(c.ratio)] for c in g.changes]]
            for g in d.groups
        ],
    }


def _round(ratio: Optional[float]) -> Optional[float]:
    return None if ratio is None else round(ratio, 4)


def upgrades(
    pairs: Mapping[Tuple[str, str], UpgradeDiff],
    runtime_pairs: Mapping[Tuple[str, str, str], UpgradeDiff],
    ladders: Mapping[str, Sequence[str]],
) -> Dict[str, Any]:
    """{"envs": {old: {new: entry}}, "runtimes": {env: {old: {new: entry}}}, "ladders": {env: its runtimes}}."""
    envs: Dict[str, Dict[str, Any]] = {}
    for (old, new), d in pairs.items():
        envs.setdefault(old, {})[new] = _upgrade_entry(d)
    runtimes: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for (env, old, new), d in runtime_pairs.items():
        runtimes.setdefault(env, {}).setdefault(old, {})[new] = _upgrade_entry(d)
    return {"envs": envs, "runtimes": runtimes, "ladders": {env: list(labels) for env, labels in ladders.items()}}


def cells_and_details(
    frame: pd.DataFrame, records: Sequence[CellRecord], rows: Sequence[Tuple[str, str, str]], dims: Dict[str, List[Any]]
) -> Dict[str, Any]:
    """Each cell as [row, one index per CELL_DIMS, verdict, exporting (1) or replay (0)], and its details."""
    row_index = {row: i for i, row in enumerate(rows)}
    dim_index = {dim: {v: i for i, v in enumerate(values)} for dim, values in dims.items()}
    verdict_index = {v.name: i for i, v in enumerate(VERDICTS)}
    strings, fingerprints, runtimes = Interned(), Interned(), Interned()
    cells, details = [], []
    origin = origins(frame)
    for index, (record, row) in enumerate(zip(records, frame.itertuples(index=False))):
        cells.append(
            [row_index[(row.case, row.params, row.strategy)]]
            + [dim_index[dim][getattr(row, dim)] for dim in CELL_DIMS]
            + [verdict_index[row.verdict], int(bool(row.own))]
        )
        export = origin[index] in (None, index)  # a replay shows its exporting cell's export
        details.append(detail(record, strings, fingerprints, runtimes, export))
    link_replays(details, origin)
    return {
        "cells": cells,
        "details": details,
        "strings": strings.values,
        "fingerprints": fingerprints.values,
        "runtimes": runtimes.values,
    }


def payload(
    frame: pd.DataFrame,
    records: Sequence[CellRecord],
    envs: Sequence[str],
    upgrade: Mapping[str, Any],
    evidence: Mapping[Tuple[str, str], str],
) -> Dict[str, Any]:
    """The page's embedded data: dimensions, rows, cells, details and the precomputed upgrade pairs."""
    labels = row_labels(records)
    rows = row_order(frame, labels)
    dims = _dim_values(frame, envs)
    family_of = dict(zip(frame["case"], frame["family"]))
    portability_of = _portability(frame)
    found = cells_and_details(frame, records, rows, dims)
    return {
        "dims": dims,
        "dimLabels": DIM_LABEL,
        "cellDims": list(CELL_DIMS),
        "pivots": [[label, list(axes)] for label, axes in PIVOTS],
        "verdicts": [[v.name, v.glyph, v.label, v.meaning] for v in VERDICTS],
        "portability": {p.value: label for p, label in PORTABILITY_LABELS.items()},
        "portabilityShort": {p.value: short for p, short in PORTABILITY_SHORT.items()},
        "homes": {env: list(labels) for env, labels in sorted(homes(frame).items())},
        "evidence": {f"{family}/{strategy}": text for (family, strategy), text in sorted(evidence.items()) if text},
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
        **found,
        "changeKinds": [list(kind) for kind in KINDS],
        "upgrade": dict(upgrade),
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
