"""The runtime ladder: which runtime judged each graph, and every cell as each runtime would judge it.

An exporting record is judged by its environment's own onnxruntime; a replay judges the same graph in another
runtime. A graph the exporting cell never made (it failed to export, or could not apply) fails the same way
whatever the runtime, so the "judged" table carries that verdict to every runtime its environment was replayed
in; a graph with no replay in a runtime is simply absent there (not run), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Sequence, Tuple

import pandas as pd

from harness.record import Verdict
from harness.report.table import FP32, MADE_BY_CONVERTER
from harness.report.vocab import precision_sort_key, runtime_sort_key

# The columns naming one cell of an environment, whatever runtime judged its graph.
CELL = [
    "env",
    "family",
    "case",
    "params",
    "strategy",
    "opset",
    "exporter",
    "shape_mode",
    "device",
    "dtype",
    "precision",
]
# The columns the views over every runtime read (the advisor, costs, evidence, upgrades): fewer columns, faster
# groupby and filtering over a table that holds each cell once per runtime.
JUDGED_COLUMNS = CELL + [
    "idx",
    "runtime",
    "runtime_name",
    "runtime_env",
    "kind",
    "home",
    "own",
    "reference",
    "portability",
    "operators",
    "verdict",
    "reason",
    "failed_stage",
    "exported",
    "max_abs",
    "mean_abs",
    "psnr",
    "lat_eager",
    "mem_eager",
    "lat_reference",
    "mem_reference",
    "lat_rt",
    "mem_rt",
]
# What a runtime must have replayed some graph of before the cells that made none are carried to it.
SCOPE = ["env", "family", "opset", "device"]
NO_GRAPH_VERDICTS = frozenset({Verdict.NOT_APPLICABLE.value, Verdict.EXPORT_FAILED.value})
RAN = frozenset({Verdict.PASS.value, Verdict.MISMATCH.value})  # the runtime loaded the graph and computed outputs
LOAD_FAILED = Verdict.LOAD_FAILED.value


def ladder(labels: Iterable[str]) -> List[str]:
    """Runtime labels in ladder order: onnxruntime by version, then OpenVINO by version."""
    return sorted(set(labels), key=runtime_sort_key)


def made_no_graph(frame: pd.DataFrame) -> pd.Series:
    """Whether each cell failed before its exporter gave a graph any runtime could judge (a replay's record keeps
    its exporting cell's export)."""
    return frame["verdict"].isin(NO_GRAPH_VERDICTS) | ~frame["exported"].astype(bool)


def exporting(frame: pd.DataFrame) -> pd.DataFrame:
    """The records judged by their own environment's runtime: the page as it was before replays."""
    return frame[frame["own"].astype(bool)]


def exported_graphs(frame: pd.DataFrame) -> pd.DataFrame:
    """The records of the graphs as exported (fp32): what the runtime views compare; converted graphs (fp16,
    int8) are judged against other tolerances and stay in the matrix, under their precision."""
    return frame[frame["precision"] == FP32]


def judged(frame: pd.DataFrame) -> pd.DataFrame:
    """Every cell as each runtime its environment was judged in sees it, `runtime` naming that runtime, at each
    precision that runtime judged (converted graphs are judged in replays only).

    The exporting records under their own runtime; under each other runtime and precision, its replays plus the
    cells that made no graph there (their verdict holds anywhere): the exporting cells that made none, and, for a
    converted precision, the conversions that failed or did not apply; for the families, opsets and devices that
    runtime judged of the environment (elsewhere nothing says what it would do). `carried` marks those. `idx`
    still points at the record shown for the row: the replay, or the record carried.
    """
    table = frame[JUDGED_COLUMNS]
    is_own = table["own"].astype(bool)
    conversion = table["kind"].isin(MADE_BY_CONVERTER)
    own = table[is_own].assign(carried=False)
    replays = table[~is_own & ~conversion]
    if replays.empty:
        return own
    no_graph = own[made_no_graph(own)]
    failed = {key: part for key, part in table[conversion].groupby(["env", "precision"], sort=False)}
    precisions = sorted(set(replays["precision"]), key=precision_sort_key)
    judges = set(zip(replays["runtime"], replays["precision"]))
    parts = [own]
    for (env, runtime), part in replays.groupby(["env", "runtime"], sort=True):
        for precision in precisions:
            mine = part[part["precision"] == precision]
            if (mine.empty and precision == FP32) or (runtime, precision) not in judges:
                continue  # this runtime judged no graph of the environment, or none of this precision at all
            conversions = failed.get((env, precision), mine.iloc[0:0])
            base = pd.concat([conversions, no_graph[no_graph["env"] == env].assign(precision=precision)])
            keep = _unjudged(base, mine, conversions, precision)
            name = part["runtime_name"].iloc[0]
            parts.append(mine.assign(carried=False))
            parts.append(base[keep].assign(runtime=runtime, runtime_name=name, carried=True))
    return pd.concat(parts, ignore_index=True)


def _rows(frame: pd.DataFrame, columns: Sequence[str]) -> List[Tuple[Any, ...]]:
    return list(zip(*(frame[c].tolist() for c in columns)))


def _unjudged(base: pd.DataFrame, mine: pd.DataFrame, conversions: pd.DataFrame, precision: str) -> List[bool]:
    """Which of `base` (cells that made no graph) to carry to a runtime that judged `mine` at `precision`: those not
    judged there, where graphs of this precision were judged, or would have been had they converted (only some
    cases' graphs are converted: for those, the scope is the case)."""
    scope = SCOPE if precision == FP32 else SCOPE + ["case"]
    seen = set(_rows(mine, CELL))
    there = set(_rows(mine, scope)) | set(_rows(conversions, scope))
    return [cell not in seen and where in there for cell, where in zip(_rows(base, CELL), _rows(base, scope))]


def runtimes_of(frame: pd.DataFrame) -> Dict[str, List[str]]:
    """Each environment's runtimes on the ladder: its own, and those its graphs were replayed in."""
    pairs = set(zip(frame["env"], frame["runtime"]))
    found: Dict[str, List[str]] = {}
    for env, runtime in pairs:
        found.setdefault(env, []).append(runtime)
    return {env: ladder(labels) for env, labels in found.items()}


def homes(frame: pd.DataFrame) -> Dict[str, Tuple[str, ...]]:
    """Each environment's own runtime: one label, or several where machines differ (onnxruntime-gpu on a GPU)."""
    found: Dict[str, List[str]] = {}
    for env, home in set(zip(frame["env"], frame["home"])):
        found.setdefault(str(env), []).append(str(home))
    return {env: tuple(ladder(labels)) for env, labels in found.items()}


@dataclass(frozen=True)
class Evidence:
    """What records show about where a strategy's graphs run: never more than a record says."""

    ran: Tuple[str, ...]  # runtimes that loaded the graphs and computed outputs (pass or mismatch)
    refused: Tuple[str, ...]  # runtimes that refused every graph they were given at load
    failed: Tuple[str, ...]  # runtimes that loaded none or ran none, not only at load

    @property
    def text(self) -> str:
        """ "ran on onnxruntime 1.10.0, 1.12.1 and OpenVINO 2026.4.1; refused at load by onnxruntime 1.8.1"."""
        parts = []
        if self.ran:
            parts.append("ran on " + join_runtimes(self.ran))
        if self.refused:
            parts.append("refused at load by " + join_runtimes(self.refused))
        if self.failed:
            parts.append("failed on " + join_runtimes(self.failed))
        return "; ".join(parts)


def evidence(cells: pd.DataFrame) -> Evidence:
    """Evidence from records that judged a graph as exported (cells that made none say nothing about runtimes)."""
    cells = exported_graphs(cells)
    tried = cells[~made_no_graph(cells)] if not cells.empty else cells
    return evidence_of(zip(tried["runtime"].tolist(), tried["verdict"].tolist()))


def evidence_of(judged: Iterable[Tuple[str, str]]) -> Evidence:
    """Evidence from (runtime, verdict) pairs, one for each graph judged."""
    verdicts: Dict[str, set] = {}
    for runtime, verdict in judged:
        verdicts.setdefault(str(runtime), set()).add(verdict)
    ran: List[str] = []
    refused: List[str] = []
    failed: List[str] = []
    for runtime, seen in verdicts.items():
        seen = seen - {Verdict.HARNESS_ERROR.value}
        if seen & RAN:
            ran.append(runtime)
        elif seen == {LOAD_FAILED}:
            refused.append(runtime)
        elif seen:
            failed.append(runtime)
    return Evidence(tuple(ladder(ran)), tuple(ladder(refused)), tuple(ladder(failed)))


def join_runtimes(labels: Sequence[str]) -> str:
    """ "onnxruntime 1.8.1, 1.10.0 and OpenVINO 2026.4.1": the versions of each runtime after its name once."""
    by_name: Dict[str, List[str]] = {}
    for label in ladder(labels):
        name, _, version = label.partition(" ")
        by_name.setdefault(name, []).append(version)
    said = [f"{name} {', '.join(v for v in versions if v)}".strip() for name, versions in by_name.items()]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]
