"""How long each strategy takes to export, measured: the worker's `export` stage in seconds, per environment,
family, strategy and exporter (the median over its exported cells), and against the family's reference strategy
exporting the same cell (the median of the ratios: 2.0x means twice native's seconds)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import pandas as pd

from harness.report.costs import format_ratio, format_seconds
from harness.report.vocab import family_sort_key

SAME_CELL = ["env", "case", "params", "opset", "exporter", "shape_mode", "device", "dtype"]


@dataclass(frozen=True)
class ExportTimeRow:
    env: str
    family: str
    strategy: str
    exporter: str
    cells: int
    median: str  # seconds, formatted
    versus: str  # the median ratio to the reference's seconds on the same cells, formatted ("—" for the reference)
    slowest: str  # the case with the longest median export, and its seconds


@dataclass(frozen=True)
class ExportTimes:
    rows: Tuple[ExportTimeRow, ...]
    note: str


def with_export_ratio(frame: pd.DataFrame) -> pd.DataFrame:
    """The exporting cells that produced a graph, each with `export_ratio` to its reference strategy's seconds for
    the same cell (NaN where the reference did not export it)."""
    own = frame[frame["kind"] == "export"]
    timed = own[own["export_s"].notna() & (own["export_s"] > 0)]
    refs = timed[timed["strategy"] == timed["reference"]][SAME_CELL + ["export_s"]]
    refs = refs.groupby(SAME_CELL, as_index=False)["export_s"].median().rename(columns={"export_s": "export_ref"})
    joined = timed.merge(refs, on=SAME_CELL, how="left")
    return joined.assign(export_ratio=joined["export_s"] / joined["export_ref"])


def export_ratios(frame: pd.DataFrame) -> Dict[Tuple[str, str, str, str, str], Optional[float]]:
    """(env, opset, family, strategy, exporter) -> median export ratio to the reference: the advisor's figure."""
    timed = with_export_ratio(frame)
    found = timed.groupby(["env", "opset", "family", "strategy", "exporter"])["export_ratio"].median()
    return {tuple(map(str, k)): (None if pd.isna(v) else float(v)) for k, v in found.items()}


def export_times(frame: pd.DataFrame, envs: Sequence[str]) -> ExportTimes:
    timed = with_export_ratio(frame)
    order = {e: i for i, e in enumerate(envs)}
    rows: List[ExportTimeRow] = []
    for (env, family, strategy, exporter), part in timed.groupby(["env", "family", "strategy", "exporter"]):
        by_case = part.groupby("case")["export_s"].median()
        ratio = part["export_ratio"].dropna()
        is_ref = bool((part["strategy"] == part["reference"]).all())
        rows.append(
            ExportTimeRow(
                str(env),
                str(family),
                str(strategy),
                str(exporter),
                len(part),
                format_seconds(float(part["export_s"].median())),
                "reference" if is_ref else format_ratio(float(ratio.median()) if len(ratio) else None),
                f"{by_case.idxmax()} {format_seconds(float(by_case.max()))}",
            )
        )
    rows.sort(key=lambda r: (order.get(r.env, len(order)), family_sort_key(r.family), r.strategy, r.exporter))
    note = (
        "torch.onnx.export's wall time in the worker (one per core, one thread), over the cells whose export "
        "produced a graph; against the family's reference: the median over the cells both exported"
    )
    return ExportTimes(tuple(rows), note)
