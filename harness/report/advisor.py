"""Which strategy to use, for each environment, deployment runtime, opset, device and family: pure functions over
the cell table (harness.report.runtimes.judged: every cell as each runtime judged it).

A candidate is a strategy with an exporter. The combinations a user may need are every (case, params,
shape mode, dtype) seen in the group. Candidates rank, in order, by:
  1. pass rate over those combinations (a harness error counts neither way: it is our bug, not theirs);
  2. portability: standard ONNX, then an onnxruntime contrib op, then a custom domain;
  3. latency: geometric mean of the ratio to the reference (see costs.py) over the candidate's passing cells,
     taking only the cells measured against the best reference the group has (the family's reference strategy
     in the same runtime if any);
  4. peak memory, the same way;
then by name, so the order is stable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import pandas as pd

from harness.record import Verdict, portability_rank, portability_short
from harness.report.costs import best_reference_only, format_ratio, geomean, main_kind, with_ratios
from harness.report.vocab import NOT_THE_STRATEGYS_FAULT

GROUP = ["env", "runtime", "opset", "device", "family"]
COMBO = ["case", "params", "shape_mode", "dtype"]
CANDIDATE = ["strategy", "exporter"]


@dataclass(frozen=True)
class Failure:
    case: str
    params: str
    shape_mode: str
    dtype: str
    verdict: str  # "missing" when the candidate has no record for a needed combination


@dataclass(frozen=True)
class Candidate:
    strategy: str
    exporter: str
    portability: str
    passed: int
    needed: int
    harness_errors: int
    failures: Tuple[Failure, ...]
    latency: Optional[float]  # geometric mean ratio to the reference
    memory: Optional[float]
    latency_s: Optional[float]  # geometric mean of the runtime's medians over all passing cells
    memory_bytes: Optional[float]

    @property
    def counted(self) -> int:
        return self.needed - self.harness_errors

    @property
    def pass_rate(self) -> float:
        return self.passed / self.counted if self.counted else 0.0

    @property
    def name(self) -> str:
        return f"{self.strategy} ({self.exporter})"


@dataclass(frozen=True)
class Advice:
    env: str
    opset: int
    device: str
    family: str
    ranked: Tuple[Candidate, ...]
    latency_ref: str
    memory_ref: str
    why: str
    inapplicable: Tuple[Candidate, ...] = ()  # candidates none of whose cells could apply: not ranked
    needs: Tuple[str, ...] = ()  # what a candidate needs of a model's other operators, one sentence each
    runtime: str = ""  # the deployment runtime's label ("onnxruntime 1.14.1")
    home: bool = True  # whether that is the environment's own runtime (its exporting cells judged the graphs)

    @property
    def pick(self) -> Optional[Candidate]:
        return self.ranked[0] if self.ranked and self.ranked[0].passed else None

    @property
    def key(self) -> Tuple[str, str, int, str, str]:
        return (self.env, self.runtime, self.opset, self.device, self.family)


def _coarse(ratio: Optional[float]) -> float:
    # Three significant digits: float noise from the geometric mean must not decide a tie.
    return float(f"{ratio:.3g}") if ratio is not None else math.inf


def rank_key(candidate: Candidate) -> Tuple[float, int, float, float, str, str]:
    return (
        -candidate.pass_rate,
        portability_rank(candidate.portability),
        _coarse(candidate.latency),
        _coarse(candidate.memory),
        candidate.strategy,
        candidate.exporter,
    )


def rank(candidates: Sequence[Candidate]) -> List[Candidate]:
    return sorted(candidates, key=rank_key)


Ratios = Dict[Tuple[str, str], Optional[float]]  # (strategy, exporter) -> geometric mean ratio


def group_costs(table: pd.DataFrame) -> Dict[Tuple[object, ...], Tuple[Ratios, str]]:
    """Per group: each candidate's geometric mean ratio, and the reference most of them were taken against."""
    if table.empty:
        return {}
    found: Dict[Tuple[object, ...], Tuple[Ratios, str]] = {}
    labels = table.groupby(GROUP, sort=False)["ref_label"].agg(main_kind)
    for key, label in labels.items():
        found[key] = ({}, str(label))
    for key, ratio in table.groupby(GROUP + CANDIDATE, sort=False)["ratio"].agg(geomean).items():
        found[key[: len(GROUP)]][0][key[len(GROUP) :]] = None if pd.isna(ratio) else float(ratio)
    return found


def candidates(group: pd.DataFrame, lat_ratio: Ratios, mem_ratio: Ratios) -> List[Candidate]:
    """Every candidate of one group, measured against every combination the group holds."""
    needed = sorted(set(map(tuple, group[COMBO].astype(str).values.tolist())))
    found = []
    for (strategy, exporter), cells in group.groupby(CANDIDATE):
        verdicts = {tuple(map(str, k)): v for k, v in zip(cells[COMBO].values.tolist(), cells["verdict"])}
        failures = []
        for combo in needed:
            verdict = verdicts.get(combo, "missing")
            if verdict != Verdict.PASS.value:
                failures.append(Failure(*combo, verdict=verdict))
        key = (strategy, exporter)
        passing = cells[cells["verdict"] == Verdict.PASS.value]
        found.append(
            Candidate(
                strategy=strategy,
                exporter=exporter,
                portability=str(cells["portability"].iloc[0]),
                passed=sum(1 for v in verdicts.values() if v == Verdict.PASS.value),
                needed=len(needed),
                harness_errors=sum(1 for f in failures if f.verdict in NOT_THE_STRATEGYS_FAULT),
                failures=tuple(failures),
                latency=lat_ratio.get(key),
                memory=mem_ratio.get(key),
                latency_s=geomean(passing["lat_rt"].dropna()),
                memory_bytes=geomean(passing["mem_rt"].dropna()),
            )
        )
    return found


def never_applies(c: Candidate) -> bool:
    """Every cell not applicable (or absent): an exporter this torch lacks, say; nothing to rank."""
    verdicts = [f.verdict for f in c.failures]
    na = Verdict.NOT_APPLICABLE.value
    return not c.passed and na in verdicts and set(verdicts) <= {na, "missing"}


def _ops(c: Candidate) -> str:
    return portability_short(c.portability)


def _passes(c: Candidate) -> str:
    return f"{c.passed}/{c.counted}"


def explain(ranked: Sequence[Candidate], latency_ref: str = "", memory_ref: str = "") -> str:
    """One line saying why the first candidate is ahead of the second."""
    if not ranked:
        return "nothing applies here"
    if not ranked[0].passed:
        return "nothing passes here"
    pick = ranked[0]
    head = f"{pick.name} passes {_passes(pick)} combinations with {_ops(pick)} ops"
    if pick.harness_errors:
        head += " ({} combination{} not measured (harness error))".format(
            pick.harness_errors, "s" if pick.harness_errors > 1 else ""
        )
    if len(ranked) == 1:
        return head + "; the only candidate"
    other = ranked[1]
    if pick.pass_rate != other.pass_rate:
        return f"{head}; {other.name} passes only {_passes(other)}"
    if portability_rank(pick.portability) != portability_rank(other.portability):
        return f"{head}; {other.name} passes as many but needs {_ops(other)} ops"
    if _coarse(pick.latency) != _coarse(other.latency):
        versus = f"{format_ratio(pick.latency)} vs {format_ratio(other.latency)} {latency_ref} latency"
        return f"{head}; faster than {other.name} ({versus})"
    if _coarse(pick.memory) != _coarse(other.memory):
        versus = f"{format_ratio(pick.memory)} vs {format_ratio(other.memory)} {memory_ref} peak"
        return f"{head}; less memory than {other.name} ({versus})"
    return f"{head}; level with {other.name} on every criterion (ordered by name)"


def advise(frame: pd.DataFrame) -> List[Advice]:
    """The ranked candidates of every (environment, runtime, opset, device, family) in the table."""
    lat = group_costs(best_reference_only(with_ratios(frame, "latency"), GROUP))
    mem = group_costs(best_reference_only(with_ratios(frame, "memory"), GROUP))
    advice = []
    for key, group in frame.groupby(GROUP, sort=True):
        (lat_ratio, lat_ref), (mem_ratio, mem_ref) = lat.get(key, ({}, "")), mem.get(key, ({}, ""))
        found = candidates(group, lat_ratio, mem_ratio)
        ranked = rank([c for c in found if not never_applies(c)])
        inapplicable = tuple(rank([c for c in found if never_applies(c)]))
        env, runtime, opset, device, family = key
        advice.append(
            Advice(
                str(env),
                int(opset),
                str(device),
                str(family),
                tuple(ranked),
                lat_ref,
                mem_ref,
                explain(ranked, lat_ref, mem_ref),
                inapplicable,
                operator_needs(group),
                str(runtime),
                bool((group["home"] == runtime).any()),
            )
        )
    return advice


def operator_needs(group: pd.DataFrame) -> Tuple[str, ...]:
    """For models that call more than one routed operator (a spatial transformer's affine_grid before its
    grid_sample), each candidate's cells chose the other operators' strategies: say which choices it needs."""
    models = group[group["operators"].fillna("") != ""]
    needs = []
    for (case, strategy, exporter), part in models.groupby(["case", "strategy", "exporter"], sort=True):
        tried = part[~part["verdict"].isin([Verdict.NOT_APPLICABLE.value, *NOT_THE_STRATEGYS_FAULT])]
        passing = set(tried.loc[tried["verdict"] == Verdict.PASS.value, "operators"])
        failing = tried[~tried["operators"].isin(passing)]
        if failing.empty:
            continue
        family, opset = str(part["family"].iloc[0]), int(part["opset"].iloc[0])
        first = failing.iloc[0]
        said = str(first["reason"] or "").split(". ")[0][:240]
        why = f"{_choice(first['operators'])}: {first['verdict']}, {said}"
        if passing:
            chosen = " or ".join(sorted(_choice(p) for p in passing))
            needs.append(f"{case}: {strategy} {family} ({exporter}) needs {chosen} at opset {opset} ({why})")
        else:
            needs.append(f"{case}: {strategy} {family} ({exporter}) fails whatever the other operators use ({why})")
    return tuple(needs)


def _choice(operators: str) -> str:
    """ "affine_grid=custom" -> "the custom affine_grid"."""
    parts = [pair.split("=", 1) for pair in str(operators).split(",") if "=" in pair]
    return " and ".join(f"the {name} {family}" for family, name in parts)
