"""What changes between two environments (each judged by its own runtime), or between two runtimes judging the
same environment's graphs: cells whose verdict, accuracy or cost moves, grouped by family, strategy and kind of
change, and which strategy to switch to."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

import pandas as pd

from harness.record import CellRecord, RecordKind, portability_rank, portability_short, split_job_id
from harness.report.advisor import Advice, Candidate
from harness.report.changes import (
    COST_CHANGE,
    KIND_NAMES,
    NA,
    PASS,
    Cell,
    CellChange,
    cell_changes,
    cells,
    compare_cells,
)
from harness.report.costs import format_ratio, format_seconds, geomean
from harness.report.table import FP32
from harness.report.vocab import family_sort_key, strategy_sort_key


@dataclass(frozen=True)
class ChangeGroup:
    """The changes of one kind for one strategy of one family: a line of the page, its rows behind a click."""

    family: str
    strategy: str
    kind: str
    changes: Tuple[CellChange, ...]


@dataclass(frozen=True)
class Side:
    """One environment's (or runtime's) answer for a family, opset and device."""

    state: str  # pick | none (ran, nothing passes) | not_applicable (every cell) | not_run
    pick: Optional[Candidate]

    @property
    def text(self) -> str:
        if self.pick is not None:
            return self.pick.name
        return {"none": "nothing passes", "not_applicable": "not applicable", "not_run": "not run"}[self.state]


@dataclass(frozen=True)
class Switch:
    family: str
    opset: int
    device: str
    old: Side
    new: Side
    gain: str

    @property
    def changed(self) -> bool:
        return self.old.state != "not_run" and self.new.state != "not_run" and self.old.text != self.new.text


@dataclass(frozen=True)
class UpgradeDiff:
    old: str  # environments, or runtimes of `env`
    new: str
    changes: Tuple[CellChange, ...]
    switches: Tuple[Switch, ...]
    counts: Dict[str, int]
    gains: Tuple[str, ...]
    groups: Tuple[ChangeGroup, ...] = ()
    env: str = ""  # set when comparing two runtimes of one environment


def grouped(changes: Sequence[CellChange], strategy_order: Dict[str, int]) -> List[ChangeGroup]:
    """By family, then strategy (the page's row order), then kind (KINDS' order)."""
    by_key: Dict[Tuple[str, str, str], List[CellChange]] = {}
    for change in changes:
        by_key.setdefault((change.family, change.strategy, change.kind), []).append(change)
    keys = sorted(
        by_key,
        key=lambda k: (
            family_sort_key(k[0]),
            strategy_order.get(k[1], len(strategy_order)),
            k[1],
            KIND_NAMES.index(k[2]),
        ),
    )
    return [ChangeGroup(f, s, k, tuple(by_key[(f, s, k)])) for f, s, k in keys]


def side(advice: Optional[Advice]) -> Side:
    if advice is None:
        return Side("not_run", None)
    if advice.pick is not None:
        return Side("pick", advice.pick)
    # "missing": a candidate has no cell for a combination (an exporter a case does not sweep), not a failure
    verdicts = [f.verdict for c in advice.ranked + advice.inapplicable for f in c.failures]
    everything_na = NA in verdicts and all(v in (NA, "missing") for v in verdicts)
    return Side("not_applicable" if everything_na else "none", None)


def _gain(old: Side, new: Side, old_name: str, new_name: str, latency_word: str) -> str:
    if old.state == "not_run" or new.state == "not_run":
        return "not run in {}".format(old_name if old.state == "not_run" else new_name)
    if new.pick is None:
        return f"nothing passes in {new_name}" if old.pick is not None else "nothing passes in either"
    if old.pick is None:
        return f"{new.pick.name} passes {new.pick.passed}/{new.pick.counted} where nothing passed before"
    before, after = old.pick, new.pick
    parts = []
    if after.pass_rate != before.pass_rate:
        parts.append(f"passes {before.passed}/{before.counted} → {after.passed}/{after.counted}")
    if portability_rank(after.portability) != portability_rank(before.portability):
        parts.append(f"{portability_short(before.portability)} → {portability_short(after.portability)} ops")
    if before.latency_s and after.latency_s:
        change = format_ratio(after.latency_s / before.latency_s)
        parts.append(
            f"{latency_word} {format_seconds(before.latency_s)} → {format_seconds(after.latency_s)} ({change})"
        )
    if before.memory_bytes and after.memory_bytes:
        parts.append(f"memory footprint {format_ratio(after.memory_bytes / before.memory_bytes)}")
    return "; ".join(parts) if parts else "the same"


def switches(
    before: Sequence[Advice], after: Sequence[Advice], old: str, new: str, latency_word: str = "ORT latency"
) -> List[Switch]:
    """For each family, device and opset advised on either side: the answer before and after."""
    old_by = {(a.family, a.device, a.opset): a for a in before}
    new_by = {(a.family, a.device, a.opset): a for a in after}
    found = []
    for key in sorted(set(old_by) | set(new_by), key=lambda k: (family_sort_key(k[0]), k[1], k[2])):
        old_side, new_side = side(old_by.get(key)), side(new_by.get(key))
        found.append(
            Switch(key[0], key[2], key[1], old_side, new_side, _gain(old_side, new_side, old, new, latency_word))
        )
    return found


def _per_strategy(changes: Sequence[CellChange]) -> str:
    per = pd.Series([c.strategy for c in changes]).value_counts()
    return ", ".join(f"{s} {n}" for s, n in per.items())


def _gains(changes: Sequence[CellChange]) -> List[str]:
    """Summary lines: what now passes, what no longer does, and how latency moved."""
    gains = []
    fixed = [c for c in changes if c.after == PASS and c.before != PASS]
    if fixed:
        gains.append(f"{len(fixed)} cells now pass: {_per_strategy(fixed)}")
    broken = [c for c in changes if c.before == PASS and c.after != PASS]
    if broken:
        gains.append(f"{len(broken)} cells no longer pass: {_per_strategy(broken)}")
    ratios = [c.ratio for c in changes if c.kind in ("faster", "slower") and c.ratio]
    if ratios:
        faster = sum(1 for r in ratios if r < 1)
        gains.append(
            f"{faster} cells faster and {len(ratios) - faster} slower by over {COST_CHANGE:.0%} "
            f"(geometric mean of those {format_ratio(geomean(ratios))})"
        )
    return gains


def _opset_gains(frame: pd.DataFrame, old: str, new: str) -> List[str]:
    old_opsets = set(frame.loc[frame["env"] == old, "opset"])
    new_opsets = set(frame.loc[frame["env"] == new, "opset"])
    gains = []
    if new_opsets - old_opsets:
        gains.append("opsets run only after the upgrade: " + ", ".join(map(str, sorted(new_opsets - old_opsets))))
    if old_opsets - new_opsets:
        gains.append("opsets run only before the upgrade: " + ", ".join(map(str, sorted(old_opsets - new_opsets))))
    return gains


def strategy_order(frame: pd.DataFrame) -> Dict[str, int]:
    """The page's order of strategies: references first, then by portability, then by name."""
    references = set(frame["reference"])
    found = set(zip(frame["strategy"], frame["portability"]))
    ranked = sorted(found, key=lambda sp: strategy_sort_key(sp[0], sp[1], sp[0] in references))
    return {strategy: i for i, (strategy, _) in reversed(list(enumerate(ranked)))}


def _diff(
    order: Dict[str, int], changes: List[CellChange], switched: List[Switch], names: Tuple[str, str], env: str = ""
) -> UpgradeDiff:
    counts = {kind: sum(1 for c in changes if c.kind == kind) for kind in KIND_NAMES}
    return UpgradeDiff(
        names[0],
        names[1],
        tuple(changes),
        tuple(switched),
        counts,
        tuple(_gains(changes)),
        tuple(grouped(changes, order)),
        env,
    )


def diff(
    frame: pd.DataFrame,
    advice: Sequence[Advice],
    old: str,
    new: str,
    order: Optional[Dict[str, int]] = None,
    same: FrozenSet[Tuple[int, int]] = frozenset(),
) -> UpgradeDiff:
    """Two environments, each judged by its own runtime (`frame` holds the exporting records, indexed by idx).
    `same`: the pairs of records (by idx) whose graph is one but for the exporter's version; on one runtime their
    latencies differ by the timer's noise alone, so no cost change of theirs is the upgrade's."""
    found = cell_changes(frame, old, new)
    runtime = dict(zip(frame["idx"].tolist(), frame["runtime"].tolist()))
    timer = [
        c
        for c in found
        if c.kind in COST_KINDS and (c.old_idx, c.new_idx) in same and runtime[c.old_idx] == runtime[c.new_idx]
    ]
    changes = [c for c in found if c not in timer]
    home = [a for a in advice if a.home]
    switched = switches([a for a in home if a.env == old], [a for a in home if a.env == new], old, new)
    result = _diff(order or strategy_order(frame), changes, switched, (old, new))
    gains = result.gains + tuple(_opset_gains(frame, old, new))
    if timer:
        gains += (
            f"{len(timer)} latency changes left out: the same graph (but for the exporter's version) on the same "
            "runtime, so the timer's noise, not the upgrade",
        )
    return replace(result, gains=gains)


COST_KINDS = ("faster", "slower")


def runtime_diff(
    mine: pd.DataFrame,
    advice: Sequence[Advice],
    env: str,
    old: str,
    new: str,
    order: Optional[Dict[str, int]] = None,
    by_runtime: Optional[Mapping[str, List[Cell]]] = None,
) -> UpgradeDiff:
    """One environment's graphs in two runtimes (`mine`: its rows of harness.report.runtimes.judged; `by_runtime`:
    cells_by_runtime(mine), when the caller compares many pairs)."""
    by_runtime = by_runtime if by_runtime is not None else cells_by_runtime(mine)
    changes = compare_cells(by_runtime.get(old, []), by_runtime.get(new, []))
    mine_advice = [a for a in advice if a.env == env and a.precision == FP32]  # the graphs as exported
    before = [a for a in mine_advice if a.runtime == old]
    after = [a for a in mine_advice if a.runtime == new]
    switched = switches(before, after, old, new, "latency")
    # A family, opset and device not judged on one side says nothing about the runtimes: named once, not listed.
    unjudged = sorted({s.family for s in switched if "not_run" in (s.old.state, s.new.state)}, key=family_sort_key)
    kept = [s for s in switched if s.old.state != "not_run" != s.new.state]
    result = _diff(order or strategy_order(mine), changes, kept, (old, new), env)
    if not unjudged:
        return result
    return replace(
        result, gains=result.gains + ("not judged in both (some opsets or devices): " + ", ".join(unjudged),)
    )


def all_pairs(
    frame: pd.DataFrame,
    advice: Sequence[Advice],
    envs: Sequence[str],
    same: FrozenSet[Tuple[int, int]] = frozenset(),
) -> Dict[Tuple[str, str], UpgradeDiff]:
    """Every ordered pair of environments, so the page can switch between them without computing anything."""
    order = strategy_order(frame)
    return {(a, b): diff(frame, advice, a, b, order, same) for a in envs for b in envs if a != b}


def same_graphs(records: Sequence[CellRecord]) -> FrozenSet[Tuple[int, int]]:
    """The pairs of exporting records (by index into `records`, both ways) whose graphs a replay or a conversion
    found one but for the exporter's version: a record judged with the other's job (CellRecord.judged_with)."""
    at = {(r.env, r.cell_id): i for i, r in enumerate(records) if r.kind == RecordKind.EXPORT.value}
    pairs = set()
    for record in records:
        if not record.judged_with:
            continue
        env, cell, precision = split_job_id(record.judged_with)
        if precision != "fp32":
            continue
        a, b = at.get((record.env, record.cell_id)), at.get((env, cell))
        if a is not None and b is not None:
            pairs.update({(a, b), (b, a)})
    return frozenset(pairs)


def runtime_pair_keys(ladder: Sequence[str], homes: Sequence[str]) -> List[Tuple[str, str]]:
    """The runtime pairs worth a precomputed diff: every upgrade up the ladder, and from the environment's own
    runtime down to each older one (deploying where the graphs were not exported); the rest would only mirror."""
    ups = [(a, b) for i, a in enumerate(ladder) for b in ladder[i + 1 :]]
    downs = [(h, b) for h in homes if h in ladder for b in ladder[: ladder.index(h)]]
    return ups + downs


def runtime_pairs(
    judged: pd.DataFrame, advice: Sequence[Advice], ladders: Dict[str, List[str]], homes: Dict[str, Tuple[str, ...]]
) -> Dict[Tuple[str, str, str], UpgradeDiff]:
    """For each environment replayed elsewhere, its graphs compared between runtimes (runtime_pair_keys)."""
    found = {}
    order = strategy_order(judged)
    for env, labels in ladders.items():
        mine = judged[judged["env"] == env]
        by_runtime = cells_by_runtime(mine)
        for old, new in runtime_pair_keys(labels, homes.get(env, ())):
            found[(env, old, new)] = runtime_diff(mine, advice, env, old, new, order, by_runtime)
    return found


def cells_by_runtime(mine: pd.DataFrame) -> Dict[str, List[Cell]]:
    """One environment's cells in each runtime, read once for all the pairs compared: the graphs as exported (the
    converted ones are compared with them in the precision view instead)."""
    mine = mine[mine["precision"] == FP32]
    return {str(runtime): cells(part) for runtime, part in mine.groupby("runtime", sort=False)}
