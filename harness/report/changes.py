"""Which cells change between two sides (two environments, or two runtimes judging one environment's graphs): the
same cell on both sides, and the first kind of change that holds, in KINDS' order of precedence.

Plain rows rather than pandas: the page compares every environment's runtimes pairwise, over a hundred pairs of
a thousand cells each, and a join and a vectorised test per pair cost more than the work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple

import pandas as pd

from harness.record import Verdict
from harness.report.runtimes import RAN, made_no_graph

MATCH = ["family", "case", "params", "strategy", "opset", "exporter", "shape_mode", "device", "dtype", "precision"]
COST_CHANGE = 0.20  # a latency change smaller than this is left out as noise
ACCURACY_CHANGE = 10.0  # a largest difference that moves by this factor (and is not tiny) is a change
ACCURACY_FLOOR = 1e-5
PASS = Verdict.PASS.value
NA = Verdict.NOT_APPLICABLE.value
# The kinds of change, in the order the page lists them: (name, label, tone).
KINDS: Tuple[Tuple[str, str, str], ...] = (
    ("became_applicable", "became applicable", "good"),
    ("now_exports", "now exports", "good"),
    ("now_passes", "now passes", "good"),
    ("now_fails", "now fails", "bad"),
    ("no_longer_exports", "no longer exports", "bad"),
    ("no_longer_applicable", "no longer applicable", "bad"),
    ("fails_differently", "fails differently", "neutral"),
    ("accuracy", "accuracy changed", "neutral"),
    ("faster", f"faster >{COST_CHANGE:.0%}", "good"),
    ("slower", f"slower >{COST_CHANGE:.0%}", "bad"),
)
KIND_NAMES = tuple(k for k, _, _ in KINDS)


@dataclass(frozen=True)
class CellChange:
    kind: str  # one of KIND_NAMES
    old_idx: int
    new_idx: int
    ratio: Optional[float]  # new latency / old latency
    family: str = ""
    strategy: str = ""
    before: str = ""  # the verdicts on either side
    after: str = ""


class Side(NamedTuple):
    """What one side says of a cell."""

    verdict: str
    graph: bool  # the cell gave a graph the runtime could judge
    max_abs: Optional[float]


def _known(value: Optional[float]) -> bool:
    return value is not None and not math.isnan(value)


def accuracy_moved(before: Side, after: Side) -> bool:
    """The largest difference moved by ACCURACY_CHANGE or more, and is not tiny on both sides."""
    if before.verdict not in RAN or not (_known(before.max_abs) and _known(after.max_abs)):
        return False
    high, low = max(before.max_abs, after.max_abs), max(min(before.max_abs, after.max_abs), 1e-12)
    return high >= ACCURACY_FLOOR and high / low >= ACCURACY_CHANGE


def change_kind(before: Side, after: Side, ratio: float) -> str:
    """The kind of change of one cell, "" for none: the first that holds, in KINDS' order of precedence."""
    old, new = before.verdict, after.verdict
    if old == NA and new != NA:
        return "became_applicable"
    if old != new:
        if not before.graph and after.graph:
            return "now_exports"
        if new == PASS:
            return "now_passes"
        if old == PASS and after.graph and new != NA:
            return "now_fails"
        if before.graph and not after.graph and new != NA:
            return "no_longer_exports"
        return "no_longer_applicable" if new == NA else "fails_differently"
    if accuracy_moved(before, after):
        return "accuracy"
    if ratio < 1 - COST_CHANGE:
        return "faster"
    return "slower" if ratio > 1 + COST_CHANGE else ""


class Cell(NamedTuple):
    """One side's record of a cell, as the comparison reads it."""

    key: Tuple[Any, ...]  # MATCH's values
    idx: int
    family: str
    strategy: str
    side: Side
    lat_rt: float
    lat_eager: float


def cells(frame: pd.DataFrame) -> List[Cell]:
    """The table's rows as the comparison reads them, in the table's order."""
    columns = [frame[c].tolist() for c in MATCH]
    graphs = (~made_no_graph(frame)).tolist()
    rows = zip(
        zip(*columns), *(frame[c].tolist() for c in ("idx", "verdict", "max_abs", "lat_rt", "lat_eager")), graphs
    )
    return [
        Cell(key, idx, key[0], key[3], Side(verdict, graph, max_abs), lat_rt, lat_eager)
        for key, idx, verdict, max_abs, lat_rt, lat_eager, graph in rows
    ]


def _ratio(old: float, new: float) -> float:
    return new / old if old > 0 and new > 0 else math.nan


def compare_cells(old: Iterable[Cell], new: Iterable[Cell]) -> List[CellChange]:
    """Every cell present on both sides whose verdict, accuracy or latency (by over 20%) changed, in `old`'s
    order (a cell twice on a side is compared with each of its records on the other)."""
    theirs: Dict[Tuple[Any, ...], List[Cell]] = {}
    for cell in new:
        theirs.setdefault(cell.key, []).append(cell)
    found = []
    for a in old:
        for b in theirs.get(a.key, ()):
            # The runtime's latency where both sides have it, else eager PyTorch's.
            ratio = _ratio(a.lat_rt, b.lat_rt)
            ratio = _ratio(a.lat_eager, b.lat_eager) if math.isnan(ratio) else ratio
            kind = change_kind(a.side, b.side, ratio)
            if kind:
                shown = None if math.isnan(ratio) else float(ratio)
                found.append(
                    CellChange(
                        kind,
                        int(a.idx),
                        int(b.idx),
                        shown,
                        str(a.family),
                        str(a.strategy),
                        a.side.verdict,
                        b.side.verdict,
                    )
                )
    return found


def compare(old: pd.DataFrame, new: pd.DataFrame) -> List[CellChange]:
    return compare_cells(cells(old), cells(new))


def cell_changes(frame: pd.DataFrame, old: str, new: str) -> List[CellChange]:
    """The changes between two environments, each judged by its own runtime (the table's exporting records)."""
    return compare(frame[frame["env"] == old], frame[frame["env"] == new])
