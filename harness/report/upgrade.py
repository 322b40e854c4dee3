"""What changes between two environments: cells whose verdict or cost moves, and which strategy to switch to."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from harness.record import Verdict, portability_rank, portability_short
from harness.report.advisor import Advice, Candidate
from harness.report.costs import format_ratio, format_seconds, geomean

MATCH = ["family", "case", "params", "strategy", "opset", "exporter", "shape_mode", "device", "dtype"]
COST_CHANGE = 0.20  # a latency change smaller than this is left out as noise
PASS = Verdict.PASS.value


@dataclass(frozen=True)
class CellChange:
    kind: str  # fixed | broken | changed | faster | slower
    old_idx: int
    new_idx: int
    ratio: Optional[float]  # new latency / old latency


@dataclass(frozen=True)
class Side:
    """One environment's answer for a family, opset and device."""

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
    old: str
    new: str
    changes: Tuple[CellChange, ...]
    switches: Tuple[Switch, ...]
    counts: Dict[str, int]
    gains: Tuple[str, ...]


def _ratio(joined: pd.DataFrame, column: str) -> pd.Series[float]:
    old, new = joined[column + "_old"], joined[column + "_new"]
    return (new / old).where((old > 0) & (new > 0))


def cell_changes(frame: pd.DataFrame, old: str, new: str) -> List[CellChange]:
    """Every cell present in both environments whose verdict changed or whose latency moved by over 20%."""
    columns = MATCH + ["idx", "verdict", "lat_ort", "lat_eager"]
    joined = frame.loc[frame["env"] == old, columns].merge(
        frame.loc[frame["env"] == new, columns], on=MATCH, suffixes=("_old", "_new")
    )
    # Onnxruntime's latency where both sides have it, else eager PyTorch's.
    ratio = _ratio(joined, "lat_ort").fillna(_ratio(joined, "lat_eager"))
    before, after = joined["verdict_old"], joined["verdict_new"]
    moved = before != after
    kind = np.select(
        [
            moved & (after == PASS),
            moved & (before == PASS),
            moved,
            ratio < 1 - COST_CHANGE,
            ratio > 1 + COST_CHANGE,
        ],
        ["fixed", "broken", "changed", "faster", "slower"],
        default="",
    )
    return [
        CellChange(str(k), int(o), int(n), None if math.isnan(r) else float(r))
        for k, o, n, r in zip(kind, joined["idx_old"], joined["idx_new"], ratio.astype(float))
        if k
    ]


def side(advice: Optional[Advice]) -> Side:
    if advice is None:
        return Side("not_run", None)
    if advice.pick is not None:
        return Side("pick", advice.pick)
    # "missing": a candidate has no cell for a combination (an exporter a case does not sweep), not a failure
    verdicts = [f.verdict for c in advice.ranked + advice.inapplicable for f in c.failures]
    na = Verdict.NOT_APPLICABLE.value
    everything_na = na in verdicts and all(v in (na, "missing") for v in verdicts)
    return Side("not_applicable" if everything_na else "none", None)


def _gain(old: Side, new: Side, old_env: str, new_env: str) -> str:
    if old.state == "not_run" or new.state == "not_run":
        return "not run in {}".format(old_env if old.state == "not_run" else new_env)
    if new.pick is None:
        return "nothing passes after the upgrade" if old.pick is not None else "nothing passes in either"
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
        parts.append(f"ORT latency {format_seconds(before.latency_s)} → {format_seconds(after.latency_s)} ({change})")
    if before.memory_bytes and after.memory_bytes:
        parts.append(f"peak memory {format_ratio(after.memory_bytes / before.memory_bytes)}")
    return "; ".join(parts) if parts else "the same"


def switches(advice: Sequence[Advice], old: str, new: str) -> List[Switch]:
    """For each family, device and opset run in either environment: the answer before and after."""
    before = {(a.family, a.device, a.opset): a for a in advice if a.env == old}
    after = {(a.family, a.device, a.opset): a for a in advice if a.env == new}
    found = []
    for key in sorted(set(before) | set(after)):
        old_side, new_side = side(before.get(key)), side(after.get(key))
        found.append(Switch(key[0], key[2], key[1], old_side, new_side, _gain(old_side, new_side, old, new)))
    return found


def _gains(frame: pd.DataFrame, old: str, new: str, changes: Sequence[CellChange]) -> List[str]:
    gains = []
    strategy = frame["strategy"]
    fixed = [c for c in changes if c.kind == "fixed"]
    if fixed:
        per = pd.Series([strategy.iloc[c.new_idx] for c in fixed]).value_counts()
        gains.append("{} cells now pass: {}".format(len(fixed), ", ".join(f"{s} {n}" for s, n in per.items())))
    broken = [c for c in changes if c.kind == "broken"]
    if broken:
        per = pd.Series([strategy.iloc[c.new_idx] for c in broken]).value_counts()
        gains.append("{} cells no longer pass: {}".format(len(broken), ", ".join(f"{s} {n}" for s, n in per.items())))
    ratios = [c.ratio for c in changes if c.kind in ("faster", "slower") and c.ratio]
    if ratios:
        faster = sum(1 for r in ratios if r < 1)
        gains.append(
            f"{faster} cells faster and {len(ratios) - faster} slower by over {COST_CHANGE:.0%} "
            f"(geometric mean of those {format_ratio(geomean(ratios))})"
        )
    old_opsets = set(frame.loc[frame["env"] == old, "opset"])
    new_opsets = set(frame.loc[frame["env"] == new, "opset"])
    if new_opsets - old_opsets:
        gains.append(
            "opsets run only after the upgrade: {}".format(", ".join(map(str, sorted(new_opsets - old_opsets))))
        )
    if old_opsets - new_opsets:
        gains.append(
            "opsets run only before the upgrade: {}".format(", ".join(map(str, sorted(old_opsets - new_opsets))))
        )
    return gains


def diff(frame: pd.DataFrame, advice: Sequence[Advice], old: str, new: str) -> UpgradeDiff:
    changes = cell_changes(frame, old, new)
    counts = {
        kind: sum(1 for c in changes if c.kind == kind) for kind in ("fixed", "broken", "changed", "faster", "slower")
    }
    return UpgradeDiff(
        old, new, tuple(changes), tuple(switches(advice, old, new)), counts, tuple(_gains(frame, old, new, changes))
    )


def all_pairs(frame: pd.DataFrame, advice: Sequence[Advice], envs: Sequence[str]) -> Dict[Tuple[str, str], UpgradeDiff]:
    """Every ordered pair, so the page can switch between them without computing anything."""
    return {(a, b): diff(frame, advice, a, b) for a in envs for b in envs if a != b}
