"""Which strategy to use, for each environment, deployment runtime, opset, device, family and precision: pure
functions over the cell table (harness.report.runtimes.judged: every cell as each runtime judged it).

A candidate is a strategy with an exporter. The combinations a user may need are every (case, params,
shape mode, dtype) seen in the group. Candidates rank, in order, by:
  1. pass rate over those combinations (a harness error counts neither way: it is our bug, not theirs);
  2. portability: standard ONNX, then an onnxruntime contrib op, then a custom domain;
  3. latency: geometric mean of the ratio to the reference (see costs.py) over the candidate's passing cells,
     taking only the cells measured against the best reference the group has (the family's reference strategy
     in the same runtime if any);
  4. memory footprint (weights, arena and one run: harness.record.Peak), the same way;
then by name, so the order is stable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pandas as pd

from harness.record import Verdict, portability_rank, portability_short
from harness.report.costs import best_reference_only, format_ratio, geomean, main_kind, with_ratios
from harness.report.table import FP32
from harness.report.vocab import NOT_THE_STRATEGYS_FAULT

GROUP = ["env", "runtime", "opset", "device", "family", "precision"]
COMBO = ["case", "params", "shape_mode", "dtype"]
CANDIDATE = ["strategy", "exporter"]
PASS = Verdict.PASS.value
SAYS_NOTHING = frozenset({Verdict.NOT_APPLICABLE.value, *NOT_THE_STRATEGYS_FAULT})  # of what a model needs


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
    precision: str = FP32  # the graphs' precision: as exported, or converted (fp16, int8-dynamic, int8-static)

    @property
    def pick(self) -> Optional[Candidate]:
        return self.ranked[0] if self.ranked and self.ranked[0].passed else None

    @property
    def key(self) -> Tuple[str, str, int, str, str, str]:
        return (self.env, self.runtime, self.opset, self.device, self.family, self.precision)


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
    labels: Dict[Tuple[object, ...], List[str]] = {}
    ratios: Dict[Tuple[object, ...], Dict[Tuple[str, str], List[float]]] = {}
    size = len(GROUP)
    for row in zip(*(table[c].tolist() for c in GROUP + CANDIDATE + ["ref_label", "ratio"])):
        key, candidate = row[:size], row[size : size + len(CANDIDATE)]
        labels.setdefault(key, []).append(row[-2])
        ratios.setdefault(key, {}).setdefault(candidate, []).append(row[-1])
    return {key: ({c: geomean(values) for c, values in ratios[key].items()}, main_kind(labels[key])) for key in labels}


# The columns the ranking reads, each group's rows as plain tuples: per-group pandas selections cost more than
# the work itself over a table of every cell in every runtime.
ROW_COLUMNS = GROUP + COMBO + CANDIDATE + ["portability", "verdict", "lat_rt", "mem_rt", "operators", "reason", "home"]


def grouped_rows(frame: pd.DataFrame) -> Dict[Tuple[object, ...], List[Any]]:
    """Each group's rows (named tuples of ROW_COLUMNS) in the table's order, the groups sorted by key."""
    found: Dict[Tuple[object, ...], List[Any]] = {}
    size = len(GROUP)
    for row in frame[ROW_COLUMNS].itertuples(index=False, name="Cell"):
        found.setdefault(tuple(row[:size]), []).append(row)
    return {key: found[key] for key in sorted(found)}


def candidates(rows: Sequence[Any], lat_ratio: Ratios, mem_ratio: Ratios) -> List[Candidate]:
    """Every candidate of one group (`rows`: grouped_rows'), measured against every combination the group holds."""
    needed = sorted({(str(r.case), str(r.params), str(r.shape_mode), str(r.dtype)) for r in rows})
    by_candidate: Dict[Tuple[str, str], List[Any]] = {}
    for row in rows:
        by_candidate.setdefault((row.strategy, row.exporter), []).append(row)
    found = []
    for key in sorted(by_candidate):
        cells = by_candidate[key]
        verdicts = {(str(r.case), str(r.params), str(r.shape_mode), str(r.dtype)): r.verdict for r in cells}
        failures = [Failure(*combo, verdict=verdicts.get(combo, "missing")) for combo in needed]
        failures = [f for f in failures if f.verdict != PASS]
        passing = [r for r in cells if r.verdict == PASS]
        found.append(
            Candidate(
                strategy=key[0],
                exporter=key[1],
                portability=str(cells[0].portability),
                passed=sum(1 for v in verdicts.values() if v == PASS),
                needed=len(needed),
                harness_errors=sum(1 for f in failures if f.verdict in NOT_THE_STRATEGYS_FAULT),
                failures=tuple(failures),
                latency=lat_ratio.get(key),
                memory=mem_ratio.get(key),
                latency_s=geomean(r.lat_rt for r in passing),
                memory_bytes=geomean(r.mem_rt for r in passing),
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
        versus = f"{format_ratio(pick.memory)} vs {format_ratio(other.memory)} {memory_ref} footprint"
        return f"{head}; less memory than {other.name} ({versus})"
    return f"{head}; level with {other.name} on every criterion (ordered by name)"


def advise(frame: pd.DataFrame, groups: Optional[Mapping[Tuple[object, ...], List[Any]]] = None) -> List[Advice]:
    """The ranked candidates of every (environment, runtime, opset, device, family, precision) in the table
    (`groups`: grouped_rows(frame), when the caller has it already)."""
    lat = group_costs(best_reference_only(with_ratios(frame, "latency"), GROUP))
    mem = group_costs(best_reference_only(with_ratios(frame, "memory"), GROUP))
    advice = []
    for key, rows in (grouped_rows(frame) if groups is None else groups).items():
        (lat_ratio, lat_ref), (mem_ratio, mem_ref) = lat.get(key, ({}, "")), mem.get(key, ({}, ""))
        found = candidates(rows, lat_ratio, mem_ratio)
        ranked = rank([c for c in found if not never_applies(c)])
        inapplicable = tuple(rank([c for c in found if never_applies(c)]))
        env, runtime, opset, device, family, precision = key
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
                operator_needs(rows),
                str(runtime),
                precision == FP32 and any(r.home == runtime for r in rows),  # converted graphs: replays only
                str(precision),
            )
        )
    return advice


def operator_needs(rows: Sequence[Any]) -> Tuple[str, ...]:
    """For models that call more than one routed operator (a spatial transformer's affine_grid before its
    grid_sample), each candidate's cells chose the other operators' strategies: say which choices it needs."""
    models: Dict[Tuple[str, str, str], List[Any]] = {}
    for row in rows:
        if isinstance(row.operators, str) and row.operators:
            models.setdefault((row.case, row.strategy, row.exporter), []).append(row)
    needs = []
    for (case, strategy, exporter), part in sorted(models.items()):
        tried = [r for r in part if r.verdict not in SAYS_NOTHING]
        passing = {r.operators for r in tried if r.verdict == PASS}
        failing = [r for r in tried if r.operators not in passing]
        if not failing:
            continue
        family, opset = str(part[0].family), int(part[0].opset)
        first = failing[0]
        said = str(first.reason or "").split(". ")[0][:240]
        why = f"{_choice(first.operators)}: {first.verdict}, {said}"
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
