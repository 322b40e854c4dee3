"""View-models: plain frozen objects holding exactly what the templates show, built from the cell table."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pandas as pd

from harness.record import SCHEMA_VERSION, CellRecord, Verdict, parse_version, portability_label
from harness.report import matrix
from harness.report.advisor import Advice, Candidate, Failure, advise
from harness.report.charts import Chart, build_charts
from harness.report.costs import format_bytes, format_ratio, format_seconds
from harness.report.load import Loaded, SourceFile
from harness.report.table import build_frame, safe_json
from harness.report.upgrade import all_pairs, side
from harness.report.vocab import (
    DIM_LABEL,
    FINGERPRINT_COLUMNS,
    VERDICT_STYLE,
    VERDICTS,
    family_sort_key,
    strategy_sort_key,
)

FILTER_DIMS = ("family", "case", "strategy", "env", "opset", "exporter", "shape_mode", "device", "verdict")
MAX_FAILURES_SHOWN = 4


@dataclass(frozen=True)
class LegendEntry:
    name: str
    glyph: str
    label: str
    meaning: str
    count: int


@dataclass(frozen=True)
class FailureGroup:
    verdict: str
    label: str
    combos: Tuple[str, ...]


@dataclass(frozen=True)
class CandidateRow:
    rank: int
    strategy: str
    exporter: str
    portability: str
    portability_label: str
    passes: str
    pass_pct: int
    failures: Tuple[FailureGroup, ...]
    harness_errors: int
    latency: str
    latency_abs: str
    memory: str
    memory_abs: str
    is_pick: bool


@dataclass(frozen=True)
class AdviceCard:
    id: str
    env: str
    opset: int
    device: str
    family: str
    status: str  # all | partial | none | not_applicable
    pick: Optional[CandidateRow]
    why: str
    latency_ref: str
    memory_ref: str
    rows: Tuple[CandidateRow, ...]
    not_applicable: Tuple[str, ...]  # the distinct reasons given by the cells that could not apply
    needs: Tuple[str, ...] = ()  # what a strategy needs of a model's other operators


@dataclass(frozen=True)
class OverviewRow:
    env: str
    opset: int
    device: str
    cards: Tuple[Optional[AdviceCard], ...]  # one per family, None where the family was not run


@dataclass(frozen=True)
class AdvisorView:
    cards: Tuple[AdviceCard, ...]
    families: Tuple[str, ...]
    envs: Tuple[str, ...]
    opsets: Tuple[int, ...]
    devices: Tuple[str, ...]
    overview: Tuple[OverviewRow, ...]
    default: Optional[AdviceCard]


@dataclass(frozen=True)
class EnvRow:
    env: str
    fingerprint: Tuple[Tuple[str, str], ...]
    cells: int
    devices: str
    runs: str
    harness_versions: str
    finished: str
    limits: Tuple[Tuple[str, str], ...] = ()  # (axis value, reason): what this environment cannot do at all


@dataclass(frozen=True)
class SourceRow:
    path: str
    records: int
    migrated: str  # how many of its records were read through a migration, "" when none
    skipped: Tuple[str, ...]  # each torn line skipped, with its fix


@dataclass(frozen=True)
class Filter:
    dim: str
    label: str
    values: Tuple[str, ...]


@dataclass(frozen=True)
class Page:
    title: str
    generated_at: str
    cells: int
    legend: Tuple[LegendEntry, ...]
    sources: Tuple[SourceRow, ...]
    refusals: Tuple[str, ...]
    skipped: int
    migrated: str
    superseded: int
    advisor: AdvisorView
    envs: Tuple[str, ...]
    upgrade_default: Tuple[str, str]
    filters: Tuple[Filter, ...]
    pivots: Tuple[str, ...]
    charts: Tuple[Chart, ...]
    environments: Tuple[EnvRow, ...]
    references: str  # each family's reference strategy, as its records name it
    data_json: str


def env_order(frame: pd.DataFrame, records: Sequence[CellRecord]) -> List[str]:
    """Environments from the oldest torch to the newest (then by name): the upgrade view's direction."""
    torch: Dict[str, Counter] = {}
    for record in records:
        torch.setdefault(record.env, Counter())[str(record.fingerprint.torch)] += 1
    return sorted(torch, key=lambda e: (parse_version(torch[e].most_common(1)[0][0]) or (999,), e))


def _combo_text(failure: Failure, labels: Mapping[Tuple[str, str], str], several: Mapping[str, bool]) -> str:
    text = labels.get((failure.case, failure.params), failure.params)
    if several["case"]:
        text = f"{failure.case}: {text}"
    extra = [getattr(failure, k) for k in ("shape_mode", "dtype") if several[k]]
    return "{} ({})".format(text, ", ".join(extra)) if extra else text


def _verdict_label(verdict: str) -> str:
    try:
        return VERDICT_STYLE[Verdict(verdict)].label
    except (ValueError, KeyError):
        return "not run"  # "missing": the candidate has no cell for a combination


def candidate_row(
    rank: int, c: Candidate, labels: Mapping[Tuple[str, str], str], several: Mapping[str, bool]
) -> CandidateRow:
    groups: Dict[str, List[str]] = {}
    for failure in c.failures:
        groups.setdefault(failure.verdict, []).append(_combo_text(failure, labels, several))
    failures = tuple(FailureGroup(v, _verdict_label(v), tuple(combos)) for v, combos in groups.items())
    return CandidateRow(
        rank=rank,
        strategy=c.strategy,
        exporter=c.exporter,
        portability=c.portability,
        portability_label=portability_label(c.portability),
        passes=f"{c.passed}/{c.counted}",
        pass_pct=int(round(100 * c.pass_rate)),
        failures=failures,
        harness_errors=c.harness_errors,
        latency=format_ratio(c.latency),
        latency_abs=format_seconds(c.latency_s),
        memory=format_ratio(c.memory),
        memory_abs=format_bytes(c.memory_bytes),
        is_pick=rank == 1 and c.passed > 0,
    )


def advice_card(advice: Advice, frame: pd.DataFrame, labels: Mapping[Tuple[str, str], str]) -> AdviceCard:
    group = frame[
        (frame["env"] == advice.env)
        & (frame["opset"] == advice.opset)
        & (frame["device"] == advice.device)
        & (frame["family"] == advice.family)
    ]
    several = {k: group[k].nunique() > 1 for k in ("case", "shape_mode", "dtype")}
    rows = tuple(candidate_row(i + 1, c, labels, several) for i, c in enumerate(advice.ranked))
    pick = advice.pick
    state = side(advice).state
    status = state if pick is None else "all" if pick.pass_rate == 1.0 else "partial"
    not_applicable = group["verdict"] == Verdict.NOT_APPLICABLE.value
    reasons = tuple(dict.fromkeys(group.loc[not_applicable, "reason"].dropna().astype(str)))
    card_id = f"advice-{advice.env}-{advice.opset}-{advice.device}-{advice.family}"
    return AdviceCard(
        card_id,
        advice.env,
        advice.opset,
        advice.device,
        advice.family,
        status,
        rows[0] if pick is not None else None,
        advice.why,
        advice.latency_ref,
        advice.memory_ref,
        rows,
        reasons[:MAX_FAILURES_SHOWN],
        advice.needs,
    )


def advisor_view(
    advice: Sequence[Advice], frame: pd.DataFrame, envs: Sequence[str], labels: Mapping[Tuple[str, str], str]
) -> AdvisorView:
    order = {e: i for i, e in enumerate(envs)}
    cards = sorted(
        (advice_card(a, frame, labels) for a in advice),
        key=lambda c: (order[c.env], c.opset, c.device, family_sort_key(c.family)),
    )
    families = tuple(sorted({c.family for c in cards}, key=family_sort_key))
    by_key = {(c.env, c.opset, c.device, c.family): c for c in cards}
    row_keys = sorted({(c.env, c.opset, c.device) for c in cards}, key=lambda k: (order[k[0]], k[2], k[1]))
    overview = tuple(OverviewRow(e, o, d, tuple(by_key.get((e, o, d, f)) for f in families)) for e, o, d in row_keys)
    preferred = [
        c for c in cards if c.env == (envs[0] if envs else None) and c.device == "cpu" and c.family == "grid_sample"
    ]
    default = next(
        (c for c in preferred if c.status == "all"), preferred[0] if preferred else (cards[0] if cards else None)
    )
    return AdvisorView(
        tuple(cards),
        families,
        tuple(envs),
        tuple(sorted({c.opset for c in cards})),
        tuple(sorted({c.device for c in cards})),
        overview,
        default,
    )


def environments(records: Sequence[CellRecord], envs: Sequence[str]) -> List[EnvRow]:
    """One row per distinct fingerprint of each environment (a GPU runner differs from a CPU one)."""
    seen: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: r.finished_at):
        fingerprint = record.fingerprint.to_json()
        key = (record.env, safe_json(fingerprint))
        entry = seen.setdefault(
            key,
            {"fp": fingerprint, "cells": 0, "devices": set(), "runs": set(), "versions": set(), "limits": {}},
        )
        entry["cells"] += 1
        entry["devices"].add(record.device)
        entry["runs"].add(record.run_id)
        entry["versions"].add(record.harness_version)
        entry["limits"].update(record.env_limits)  # the newest record's reason for an axis wins
        entry.setdefault("first", record.finished_at)
        entry["last"] = record.finished_at
    order = {e: i for i, e in enumerate(envs)}
    rows: List[EnvRow] = []
    said: Dict[str, set] = {}  # the limits already shown for an environment: said once, not per machine
    for (env, _), entry in sorted(seen.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        fields = tuple((k, "—" if entry["fp"].get(k) is None else str(entry["fp"][k])) for k in FINGERPRINT_COLUMNS)
        joined = [", ".join(sorted(entry[k])) for k in ("devices", "runs", "versions")]
        limits = sorted((str(k), str(v)) for k, v in entry["limits"].items())
        known = said.setdefault(env, set())
        new = tuple(limit for limit in limits if limit not in known)
        known.update(new)
        rows.append(EnvRow(env, fields, entry["cells"], *joined, f"{entry['first']} – {entry['last']}", new))
    return rows


def _migrated_text(counts: Mapping[int, int]) -> str:
    """ "180 of schema 1": the records written with an older schema, read through its migration."""
    return ", ".join(f"{n} of schema {v}" for v, n in counts.items())


def source_row(source: SourceFile) -> SourceRow:
    migrated = _migrated_text(dict(source.migrated))
    return SourceRow(
        source.path,
        source.records,
        f"{migrated}, read through the migration to schema {SCHEMA_VERSION}" if migrated else "",
        tuple(s.describe() for s in source.skipped),
    )


def references_text(frame: pd.DataFrame) -> str:
    """ "native for grid_sample, resize; eager for control_flow": what costs are relative to, per family."""
    by_reference: Dict[str, List[str]] = {}
    pairs = set(zip(frame["family"], frame["reference"]))
    for family, reference in sorted(pairs, key=lambda p: (family_sort_key(p[0]), p[1])):
        by_reference.setdefault(str(reference), []).append(str(family))
    return "; ".join(f"{ref} for {', '.join(families)}" for ref, families in by_reference.items())


def filters(frame: pd.DataFrame, envs: Sequence[str]) -> List[Filter]:
    found = []
    for dim in FILTER_DIMS:
        if dim == "env":
            values = list(envs)
        elif dim == "family":
            values = sorted(set(frame[dim].tolist()), key=family_sort_key)
        elif dim == "verdict":
            values = [v.name for v in VERDICTS if v.name in set(frame["verdict"])]
        else:
            values = [str(v) for v in sorted(set(frame[dim].tolist()))]
        found.append(Filter(dim, DIM_LABEL[dim], tuple(values)))
    return found


def generated_at() -> str:
    # SOURCE_DATE_EPOCH makes a rebuilt page byte-identical (reproducible builds convention).
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (
        datetime.fromtimestamp(int(epoch), timezone.utc) if epoch and epoch.isdigit() else datetime.now(timezone.utc)
    )
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def build_page(loaded: Loaded, title: str = "onnx-compat-matrix") -> Page:
    """Everything the page shows, computed once; the templates only lay it out."""
    records = loaded.records
    frame = build_frame(records)
    envs = env_order(frame, records)
    advice = advise(frame)
    pairs = all_pairs(frame, advice, envs)
    labels = matrix.row_labels(records)
    data = matrix.payload(frame, records, envs, pairs)
    counts = Counter(frame["verdict"])
    portability = dict(zip(frame["strategy"], frame["portability"]))
    references = set(frame["reference"])
    strategies = sorted(portability, key=lambda s: strategy_sort_key(s, portability[s], s in references))
    return Page(
        title=title,
        generated_at=generated_at(),
        cells=len(frame),
        legend=tuple(LegendEntry(v.name, v.glyph, v.label, v.meaning, counts.get(v.name, 0)) for v in VERDICTS),
        sources=tuple(source_row(s) for s in loaded.sources),
        refusals=tuple(r.line() for r in loaded.refusals),
        skipped=len(loaded.skipped),
        migrated=_migrated_text(loaded.migrated),
        superseded=loaded.superseded,
        advisor=advisor_view(advice, frame, envs, labels),
        envs=tuple(envs),
        upgrade_default=(envs[0], envs[-1]) if envs else ("", ""),
        filters=tuple(filters(frame, envs)),
        pivots=tuple(label for label, _ in data["pivots"]),
        charts=tuple(build_charts(frame, envs, strategies)),
        environments=tuple(environments(records, envs)),
        references=references_text(frame),
        data_json=matrix.dumps_lines(data, safe_json),
    )
