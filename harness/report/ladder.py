"""Where each strategy's graphs run: per family and strategy, one row per exporting environment and opset, one
column per runtime on the ladder, each cell what that runtime made of the row's graphs."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pandas as pd

from harness.record import Verdict, portability_label
from harness.report.runtimes import evidence_of, exported_graphs, exporting, ladder, made_no_graph
from harness.report.vocab import VERDICT_STYLE, family_sort_key, strategy_sort_key

ROW = ["env", "opset", "exporter", "device"]
MAX_MESSAGES = 3
MAX_MESSAGE = 600  # characters of one message in a ladder cell; the cell's details in the matrix keep more
PASS = Verdict.PASS.value


@dataclass(frozen=True)
class LadderCell:
    text: str  # "5/7": passing graphs of those this runtime judged; "" when there was nothing to judge
    tone: str  # all | some | none | missing (not replayed there) | nograph (no graph was exported)
    title: str  # the verdicts in words
    home: bool  # the exporting environment's own runtime
    messages: Tuple[Tuple[str, int, str], ...] = ()  # (verdict label, how many graphs, the runtime's message)
    first_nodes: Tuple[Tuple[str, int], ...] = ()  # (the first diverging node's op, how many mismatches): diverge


@dataclass(frozen=True)
class LadderRow:
    label: str  # "torch1.12 · opset 16", with the exporter and device where the strategy has several
    exported: str  # "8/8": graphs exported of the cells that could apply
    exported_title: str
    cells: Tuple[LadderCell, ...]


@dataclass(frozen=True)
class LadderStrategy:
    strategy: str
    portability: str
    portability_label: str
    evidence: str  # where its graphs ran or were refused, over every environment
    rows: Tuple[LadderRow, ...]


@dataclass(frozen=True)
class LadderFamily:
    family: str
    strategies: Tuple[LadderStrategy, ...]


@dataclass(frozen=True)
class LadderView:
    runtimes: Tuple[str, ...]  # the columns
    families: Tuple[LadderFamily, ...]
    replays: int  # replay records behind the view (0: only each environment's own runtime was measured)


def _verdicts_text(counts: Counter) -> str:
    order = {style.name: i for i, style in enumerate(VERDICT_STYLE.values())}
    parts = sorted(counts.items(), key=lambda kv: order.get(kv[0], len(order)))
    return ", ".join(f"{n} {VERDICT_STYLE[Verdict(v)].label}" for v, n in parts)


# Folders in a message (each graph's own artifact path): left out, so that one error over many graphs reads once.
FOLDERS = re.compile(r"(?<![\w.])/(?:[^\s/\"']+/)+")


# What the view reads of each record.
COLUMNS = ["family", "strategy"] + ROW + ["runtime", "home", "verdict", "message", "reason", "no_graph"]


def _messages(part: Sequence[Any]) -> Tuple[Tuple[str, int, str], ...]:
    counts: Counter = Counter()
    for cell in part:
        if cell.verdict != PASS:
            message, reason = cell.message, cell.reason
            text = message if isinstance(message, str) else reason if isinstance(reason, str) else ""
            counts[(cell.verdict, FOLDERS.sub(".../", text)[:MAX_MESSAGE])] += 1
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:MAX_MESSAGES]
    return tuple((VERDICT_STYLE[Verdict(v)].label, n, text) for (v, text), n in top if text)


def ladder_cell(
    part: Sequence[Any], graphs: int, runtime: str, home: bool, first: Optional[Counter] = None
) -> LadderCell:
    """What one runtime made of a row's graphs (`part`: its records there, as rows of COLUMNS; `first`: where its
    mismatches first part from a trusted run, by op)."""
    if not graphs:
        return LadderCell("", "nograph", "no graph to judge: none was exported", home)
    if not part:
        return LadderCell("—", "missing", f"not replayed in {runtime}", home)
    counts = Counter(cell.verdict for cell in part)
    passed = counts.get(PASS, 0)
    tone = "all" if passed == len(part) else "some" if passed else "none"
    title = _verdicts_text(counts)
    if len(part) < graphs:
        title += f" ({graphs - len(part)} of the {graphs} graphs not replayed here)"
    if home:
        title += "; judged by the exporting environment itself"
    nodes = tuple(sorted((first or Counter()).items(), key=lambda kv: -kv[1]))
    return LadderCell(f"{passed}/{len(part)}", tone, title, home, _messages(part), nodes)


def _row_label(key: Tuple[object, ...], several: Dict[str, bool]) -> str:
    env, opset, exporter, device = key
    parts = [str(env), f"opset {opset}"]
    parts += [str(v) for v, dim in ((exporter, "exporter"), (device, "device")) if several[dim]]
    return " · ".join(parts)


def _exported(cells: Sequence[Any], graphs: Sequence[Any]) -> Tuple[str, str]:
    failed = Counter(cell.verdict for cell in cells if cell.no_graph)
    title = f"{len(graphs)} graphs exported of {len(cells)} cells that apply"
    return f"{len(graphs)}/{len(cells)}", title + (f"; {_verdicts_text(failed)}" if failed else "")


def strategy_rows(
    own: Sequence[Any],
    replays: Mapping[Tuple[object, ...], Sequence[Any]],
    runtimes: Sequence[str],
    first: Optional[Mapping[Tuple[object, ...], Counter]] = None,
) -> List[LadderRow]:
    """One row per environment, opset, exporter and device where the strategy applied (`own`: its exporting cells,
    `replays`: its replays by ROW and runtime; both rows of COLUMNS)."""
    groups: Dict[Tuple[object, ...], List[Any]] = {}
    for cell in own:
        if cell.verdict != Verdict.NOT_APPLICABLE.value:
            groups.setdefault((cell.env, cell.opset, cell.exporter, cell.device), []).append(cell)
    several = {dim: len({key[i] for key in groups}) > 1 for i, dim in ((2, "exporter"), (3, "device"))}
    order = {e: i for i, e in enumerate(dict.fromkeys(cell.env for cell in own))}
    rows = []
    for key in sorted(groups, key=lambda k: (order[k[0]], k[1:])):
        cells = groups[key]
        graphs = [cell for cell in cells if not cell.no_graph]
        home = str(cells[0].home)
        found = []
        for runtime in runtimes:
            part = graphs if runtime == home else replays.get(key + (runtime,), ())
            nodes = (first or {}).get((cells[0].family, cells[0].strategy) + key + (runtime,))
            found.append(ladder_cell(part, len(graphs), runtime, runtime == home, nodes))
        rows.append(LadderRow(_row_label(key, several), *_exported(cells, graphs), tuple(found)))
    return rows


def _rows(frame: pd.DataFrame) -> List[Any]:
    return list(frame.assign(no_graph=made_no_graph(frame))[COLUMNS].itertuples(index=False, name="LadderRecord"))


def ladder_view(
    frame: pd.DataFrame, envs: Sequence[str], first: Optional[Mapping[Tuple[object, ...], Counter]] = None
) -> LadderView:
    """Every family's strategies on the runtime ladder (`frame`: every record, exporting and replayed; `first`: the
    first diverging nodes by square, harness.report.divergence.first_nodes)."""
    order = {e: i for i, e in enumerate(envs)}
    own = exporting(frame).sort_values(by="env", key=lambda col: col.map(order), kind="stable")
    replayed = exported_graphs(frame[~frame["own"].astype(bool)])
    runtimes = ladder(exported_graphs(frame)["runtime"])
    by_row: Dict[Tuple[object, ...], Dict[Tuple[object, ...], List[Any]]] = {}
    for cell in _rows(replayed):
        by_row.setdefault(cell[:2], {}).setdefault(cell[2:7], []).append(cell)
    own_rows: Dict[Tuple[object, ...], List[Any]] = {}
    for cell in _rows(own):
        own_rows.setdefault(cell[:2], []).append(cell)
    references = set(zip(own["family"], own["reference"]))
    families = []
    for family in sorted(set(own["family"]), key=family_sort_key):
        mine = own[own["family"] == family]
        portability = dict(zip(mine["strategy"], mine["portability"]))
        strategies = sorted(portability, key=lambda s: strategy_sort_key(s, portability[s], (family, s) in references))
        found = []
        for strategy in strategies:
            cells, replays = own_rows.get((family, strategy), []), by_row.get((family, strategy), {})
            rows = strategy_rows(cells, replays, runtimes, first)
            if rows:
                judged = cells + [cell for part in replays.values() for cell in part]
                seen = evidence_of((c.runtime, c.verdict) for c in judged if not c.no_graph)
                p = portability[strategy]
                found.append(LadderStrategy(strategy, p, portability_label(p), seen.text, tuple(rows)))
        if found:
            families.append(LadderFamily(family, tuple(found)))
    return LadderView(tuple(runtimes), tuple(families), len(replayed))
