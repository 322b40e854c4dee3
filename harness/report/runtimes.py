"""The runtime ladder: which runtime judged each graph, and every cell as each runtime would judge it.

An exporting record is judged by its environment's own onnxruntime; a replay judges the same graph in another
runtime. A graph the exporting cell never made (it failed to export, or could not apply) fails the same way
whatever the runtime, so the "judged" table carries that verdict to every runtime its environment was replayed
in; a graph with no replay in a runtime is simply absent there (not run), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Sequence, Tuple

import pandas as pd

from harness.record import Verdict
from harness.report.table import FP32
from harness.report.vocab import runtime_sort_key

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
    """Every cell as each runtime its environment was judged in sees it, `runtime` naming that runtime.

    The exporting records under their own runtime; under each other runtime, its replays plus the exporting
    cells that made no graph (their verdict holds anywhere), for the families, opsets and devices replayed there
    (elsewhere nothing says what that runtime would do). `carried` marks those. `idx` still points at the record
    shown for the row: the replay, or the exporting record carried.
    """
    frame = exported_graphs(frame)[JUDGED_COLUMNS]
    own = exporting(frame).assign(carried=False)
    replays = frame[~frame["own"].astype(bool)]
    if replays.empty:
        return own
    no_graph = own[made_no_graph(own)]
    parts = [own]
    for (env, runtime), part in replays.groupby(["env", "runtime"], sort=True):
        base = no_graph[no_graph["env"] == env]
        seen = pd.MultiIndex.from_frame(part[CELL].astype(str))
        replayed = pd.MultiIndex.from_frame(part[SCOPE].astype(str))
        keep = ~pd.MultiIndex.from_frame(base[CELL].astype(str)).isin(seen)
        keep &= pd.MultiIndex.from_frame(base[SCOPE].astype(str)).isin(replayed)
        carried = base[keep].assign(runtime=runtime, runtime_name=part["runtime_name"].iloc[0], carried=True)
        parts.append(part.assign(carried=False))
        parts.append(carried)
    return pd.concat(parts, ignore_index=True)


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
    ran: List[str] = []
    refused: List[str] = []
    failed: List[str] = []
    for runtime, part in tried.groupby("runtime", sort=False):
        verdicts = set(part["verdict"]) - {Verdict.HARNESS_ERROR.value}
        if verdicts & RAN:
            ran.append(str(runtime))
        elif verdicts == {LOAD_FAILED}:
            refused.append(str(runtime))
        elif verdicts:
            failed.append(str(runtime))
    return Evidence(tuple(ladder(ran)), tuple(ladder(refused)), tuple(ladder(failed)))


def join_runtimes(labels: Sequence[str]) -> str:
    """ "onnxruntime 1.8.1, 1.10.0 and OpenVINO 2026.4.1": the versions of each runtime after its name once."""
    by_name: Dict[str, List[str]] = {}
    for label in ladder(labels):
        name, _, version = label.partition(" ")
        by_name.setdefault(name, []).append(version)
    said = [f"{name} {', '.join(v for v in versions if v)}".strip() for name, versions in by_name.items()]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]
