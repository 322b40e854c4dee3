"""Where each strategy's graphs run: per family and strategy, one row per exporting environment and opset, one
column per runtime on the ladder, each cell what that runtime made of the row's graphs."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import pandas as pd

from harness.record import Verdict, portability_label
from harness.report.runtimes import evidence, exported_graphs, exporting, ladder, made_no_graph
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


def _messages(part: pd.DataFrame) -> Tuple[Tuple[str, int, str], ...]:
    counts: Counter = Counter()
    for verdict, message, reason in zip(part["verdict"], part["message"], part["reason"]):
        if verdict != PASS:
            text = message if isinstance(message, str) else reason if isinstance(reason, str) else ""
            counts[(verdict, FOLDERS.sub(".../", text)[:MAX_MESSAGE])] += 1
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:MAX_MESSAGES]
    return tuple((VERDICT_STYLE[Verdict(v)].label, n, text) for (v, text), n in top if text)


def ladder_cell(part: pd.DataFrame, graphs: int, runtime: str, home: bool) -> LadderCell:
    """What one runtime made of a row's graphs (`part`: its records there)."""
    if not graphs:
        return LadderCell("", "nograph", "no graph to judge: none was exported", home)
    if part.empty:
        return LadderCell("—", "missing", f"not replayed in {runtime}", home)
    counts = Counter(part["verdict"])
    passed = counts.get(PASS, 0)
    tone = "all" if passed == len(part) else "some" if passed else "none"
    title = _verdicts_text(counts)
    if len(part) < graphs:
        title += f" ({graphs - len(part)} of the {graphs} graphs not replayed here)"
    if home:
        title += "; judged by the exporting environment itself"
    return LadderCell(f"{passed}/{len(part)}", tone, title, home, _messages(part))


def _row_label(key: Tuple[object, ...], several: Dict[str, bool]) -> str:
    env, opset, exporter, device = key
    parts = [str(env), f"opset {opset}"]
    parts += [str(v) for v, dim in ((exporter, "exporter"), (device, "device")) if several[dim]]
    return " · ".join(parts)


def _exported(cells: pd.DataFrame, graphs: pd.DataFrame) -> Tuple[str, str]:
    failed = Counter(cells.loc[~cells.index.isin(graphs.index), "verdict"])
    title = f"{len(graphs)} graphs exported of {len(cells)} cells that apply"
    return f"{len(graphs)}/{len(cells)}", title + (f"; {_verdicts_text(failed)}" if failed else "")


def strategy_rows(
    own: pd.DataFrame, replays: Dict[Tuple[object, ...], pd.DataFrame], runtimes: Sequence[str]
) -> List[LadderRow]:
    """One row per environment, opset, exporter and device where the strategy applied (`own`: its exporting cells)."""
    applies = own[own["verdict"] != Verdict.NOT_APPLICABLE.value]
    several = {dim: applies[dim].nunique() > 1 for dim in ("exporter", "device")}
    rows = []
    order = {e: i for i, e in enumerate(dict.fromkeys(own["env"]))}
    groups = sorted(applies.groupby(ROW, sort=False), key=lambda kv: (order[kv[0][0]], kv[0][1:]))
    for key, cells in groups:
        graphs = cells[~made_no_graph(cells)]
        home = str(cells["home"].iloc[0])
        found = []
        for runtime in runtimes:
            part = graphs if runtime == home else replays.get(key + (runtime,), graphs.iloc[0:0])
            found.append(ladder_cell(part, len(graphs), runtime, runtime == home))
        rows.append(LadderRow(_row_label(key, several), *_exported(cells, graphs), tuple(found)))
    return rows


def ladder_view(frame: pd.DataFrame, envs: Sequence[str]) -> LadderView:
    """Every family's strategies on the runtime ladder (`frame`: every record, exporting and replayed)."""
    order = {e: i for i, e in enumerate(envs)}
    own = exporting(frame).sort_values(by="env", key=lambda col: col.map(order), kind="stable")
    replayed = exported_graphs(frame[~frame["own"].astype(bool)])
    runtimes = ladder(exported_graphs(frame)["runtime"])
    by_strategy = {k: part for k, part in replayed.groupby(["family", "strategy"], sort=False)}
    references = set(zip(own["family"], own["reference"]))
    families = []
    for family in sorted(set(own["family"]), key=family_sort_key):
        mine = own[own["family"] == family]
        portability = dict(zip(mine["strategy"], mine["portability"]))
        strategies = sorted(portability, key=lambda s: strategy_sort_key(s, portability[s], (family, s) in references))
        found = []
        for strategy in strategies:
            cells = mine[mine["strategy"] == strategy]
            theirs = by_strategy.get((family, strategy), replayed.iloc[0:0])
            replays = {k: part for k, part in theirs.groupby(ROW + ["runtime"], sort=False)}
            rows = strategy_rows(cells, replays, runtimes)
            if rows:
                seen = evidence(pd.concat([cells, theirs]))
                p = portability[strategy]
                found.append(LadderStrategy(strategy, p, portability_label(p), seen.text, tuple(rows)))
        if found:
            families.append(LadderFamily(family, tuple(found)))
    return LadderView(tuple(runtimes), tuple(families), len(replayed))
