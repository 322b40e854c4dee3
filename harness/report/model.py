"""View-models: plain frozen objects holding exactly what the templates show, built from the cell table."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import pandas as pd

from harness.record import SCHEMA_VERSION, CellRecord, parse_version, platform_tag
from harness.report import matrix
from harness.report.advisor import advise, grouped_rows
from harness.report.cards import AdvisorView, advisor_view
from harness.report.charts import Chart, build_charts, strategy_colours
from harness.report.divergence import (
    SIDE_KINDS,
    DivergenceView,
    detail_of,
    divergence_view,
    first_nodes,
    judged_key,
    twin_divergences,
)
from harness.report.export_time import ExportTimes, export_times
from harness.report.ladder import LadderView, ladder_view
from harness.report.load import Loaded, SourceFile
from harness.report.precision import PrecisionView, precision_view
from harness.report.recipes import recipe_rows
from harness.report.runtimes import exporting, homes, judged, ladder, runtimes_of
from harness.report.table import EXPORT, FP32, REPLAY, build_frame, made_its_graph, safe_json
from harness.report.upgrade import all_pairs, runtime_pairs, same_graphs
from harness.report.vocab import (
    DIM_LABEL,
    FINGERPRINT_COLUMNS,
    VERDICTS,
    family_sort_key,
    precision_sort_key,
    runtime_label,
    strategy_sort_key,
)

FILTER_DIMS = (
    "family",
    "case",
    "strategy",
    "env",
    "runtime",
    "opset",
    "exporter",
    "shape_mode",
    "device",
    "precision",
    "verdict",
)
OWN_RUNTIME = "=own"  # the runtime filter's value for "each environment's own runtime": the page's default


@dataclass(frozen=True)
class LegendEntry:
    name: str
    glyph: str
    label: str
    meaning: str
    count: int


@dataclass(frozen=True)
class EnvRow:
    env: str
    platform: str  # "linux_x86_64": the platform in the words of the environment files (the fingerprint's, shortened)
    fingerprint: Tuple[Tuple[str, str], ...]
    cells: int
    devices: str
    runs: str
    harness_versions: str
    finished: str
    limits: Tuple[Tuple[str, str], ...] = ()  # (axis value, reason): what this environment cannot do at all
    packages: Tuple[Tuple[str, str], ...] = ()  # (cases, versions): the cases' own requirements as resolved here


@dataclass(frozen=True)
class SourceRow:
    path: str
    records: int
    migrated: str  # how many of its records were read through a migration, "" when none
    skipped: Tuple[str, ...]  # each torn line skipped, with its fix


@dataclass(frozen=True)
class RuntimeRow:
    """One runtime environment that replayed graphs."""

    label: str
    env: str
    python: str
    platform: str
    providers: str
    records: int
    exported_in: str  # the environments whose graphs it judged
    finished: str
    precisions: str = FP32  # the precisions of the graphs it judged


@dataclass(frozen=True)
class Filter:
    dim: str
    label: str
    values: Tuple[str, ...]
    default: str = ""  # the value selected when the page opens ("" = all)
    extra: Tuple[Tuple[str, str], ...] = ()  # (value, label) offered before the values


@dataclass(frozen=True)
class RuntimeChoice:
    """An environment whose graphs were judged in several runtimes: the runtime upgrade view's choices."""

    env: str
    home: str  # its own runtime (several joined with " or ")
    runtimes: Tuple[str, ...]
    default_old: str  # what the view compares first: its own runtime ...
    default_new: str  # ... with the newest other onnxruntime (else the newest other runtime)


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
    runtime_choices: Tuple[RuntimeChoice, ...]
    ladder: LadderView
    divergence: DivergenceView
    precision: PrecisionView
    runtimes: Tuple[RuntimeRow, ...]
    replays: int  # records of graphs judged again elsewhere (converted ones included)
    replay_runtimes: int  # how many distinct runtimes replayed graphs
    filters: Tuple[Filter, ...]
    pivots: Tuple[str, ...]
    charts: Tuple[Chart, ...]
    environments: Tuple[EnvRow, ...]
    references: str  # each family's reference strategy, as its records name it
    data_json: str
    export_times: ExportTimes = ExportTimes((), "")


def newest_upgrade(envs: Sequence[str]) -> Tuple[str, str]:
    """The upgrade the page opens on: to the newest torch from the one before it (the step a user takes next)."""
    if not envs:
        return ("", "")
    return (envs[-2] if len(envs) > 1 else envs[0], envs[-1])


def env_order(frame: pd.DataFrame, records: Sequence[CellRecord]) -> List[str]:
    """Environments from the oldest torch to the newest (then by name): the upgrade view's direction."""
    torch: Dict[str, Counter] = {}
    for record in records:
        torch.setdefault(record.env, Counter())[str(record.fingerprint.torch)] += 1
    return sorted(torch, key=lambda e: (parse_version(torch[e].most_common(1)[0][0]) or (999,), e))


def environments(records: Sequence[CellRecord], envs: Sequence[str]) -> List[EnvRow]:
    """One row per distinct fingerprint of each environment (a GPU runner differs from a CPU one)."""
    seen: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: r.finished_at):
        fingerprint = record.fingerprint.to_json()
        packages = fingerprint.pop("packages", None) or {}  # a case's own: said beside the environment's row
        key = (record.env, safe_json(fingerprint))
        entry = seen.setdefault(
            key,
            {"fp": fingerprint, "cells": 0, "devices": set(), "runs": set(), "versions": set(), "limits": {}},
        )
        if packages:
            entry.setdefault("packages", {})[record.case] = ", ".join(f"{k} {v}" for k, v in sorted(packages.items()))
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
        platform = platform_tag(entry["fp"].get("platform"))
        span = f"{entry['first']} – {entry['last']}"
        rows.append(EnvRow(env, platform, fields, entry["cells"], *joined, span, new, _by_versions(entry)))
    return rows


def _by_versions(entry: Dict[str, Any]) -> Tuple[Tuple[str, str], ...]:
    """(the cases, the versions) for each set of versions the cases' requirements resolved to."""
    cases: Dict[str, List[str]] = {}
    for case, versions in sorted(entry.get("packages", {}).items()):
        cases.setdefault(versions, []).append(case)
    return tuple(sorted((", ".join(names), versions) for versions, names in cases.items()))


def runtime_rows(records: Sequence[CellRecord], envs: Sequence[str]) -> List[RuntimeRow]:
    """One row per runtime environment that replayed graphs, on the ladder (the converter judged none)."""
    seen: Dict[Tuple[str, str], Dict[str, Any]] = {}
    replays = (r for r in records if r.kind == REPLAY)
    for record in sorted(replays, key=lambda r: r.finished_at):
        runtime = record.runtime
        label = runtime_label(runtime.name, runtime.version)
        entry = seen.setdefault(
            (label, str(runtime.env)), {"runtime": runtime, "records": 0, "envs": set(), "precisions": set()}
        )
        entry["records"] += 1
        entry["envs"].add(record.env)
        entry["precisions"].add(record.precision)
        entry.setdefault("first", record.finished_at)
        entry["last"] = record.finished_at
    order = {label: i for i, label in enumerate(ladder(label for label, _ in seen))}
    rows = []
    for (label, env), entry in sorted(seen.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        runtime = entry["runtime"]
        exported_in = ", ".join(e for e in envs if e in entry["envs"])
        finished = f"{entry['first']} – {entry['last']}"
        shown = [runtime.python or "—", runtime.platform or "—", ", ".join(runtime.providers) or "—"]
        precisions = ", ".join(sorted(entry["precisions"], key=precision_sort_key))
        rows.append(RuntimeRow(label, env, *shown, entry["records"], exported_in, finished, precisions))
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
        if dim == "runtime":
            own = (OWN_RUNTIME, "each environment's own")
            found.append(Filter(dim, DIM_LABEL[dim], tuple(ladder(frame[dim])), OWN_RUNTIME, (own,)))
            continue
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


def runtime_choices(frame: pd.DataFrame, envs: Sequence[str]) -> List[RuntimeChoice]:
    """The environments whose graphs were judged in more than their own runtime."""
    found, home = runtimes_of(frame), homes(frame)
    choices = []
    for env in envs:
        others = [r for r in found.get(env, ()) if r not in home[env]]
        if others:
            onnxruntime = [r for r in others if r.startswith("onnxruntime ")]
            newest = (onnxruntime or others)[-1]
            choices.append(RuntimeChoice(env, " or ".join(home[env]), tuple(found[env]), home[env][-1], newest))
    return choices


def _attach_divergences(data: Dict[str, Any], records: Sequence[CellRecord], side: Sequence[CellRecord]) -> None:
    """Each mismatching cell's details carry where it first parts from a trusted run ("dv"), when it was located."""
    found = {judged_key(r): r for r in side if r.divergence is not None}
    for index, record in enumerate(records):
        divergence = found.get(judged_key(record))
        if divergence is not None:
            data["details"][index]["dv"] = detail_of(divergence)


def build_page(loaded: Loaded, title: str = "onnx-compat-matrix") -> Page:
    """Everything the page shows, computed once; the templates only lay it out."""
    side = [r for r in loaded.records if r.kind in SIDE_KINDS]  # traces and divergences: about other records
    records = [r for r in loaded.records if not made_its_graph(r) and r.kind not in SIDE_KINDS]
    side += twin_divergences(records, side)
    frame = build_frame(records)
    envs = env_order(frame, records)
    own, everywhere = exporting(frame), judged(frame)
    exported = everywhere[everywhere["precision"] == FP32]  # the graphs as exported: what upgrades compare
    groups = grouped_rows(everywhere)
    advice = advise(everywhere, groups)
    advice_fp32 = [a for a in advice if a.precision == FP32]
    pairs = all_pairs(own, [a for a in advice_fp32 if a.home], envs, same_graphs(records))
    choices = runtime_choices(exported, envs)
    ladders = {c.env: list(c.runtimes) for c in choices}
    by_runtime = runtime_pairs(exported, advice_fp32, ladders, homes(frame))
    where = ladder_view(frame, envs, first_nodes(side))
    evidence = {(f.family, s.strategy): s.evidence for f in where.families for s in f.strategies}
    data = matrix.payload(frame, records, envs, matrix.upgrades(pairs, by_runtime, ladders), evidence)
    _attach_divergences(data, records, side)
    rows = runtime_rows(records, envs)
    counts = Counter(own["verdict"])
    portability = dict(zip(own["strategy"], own["portability"]))
    references = set(own["reference"])
    strategies = sorted(portability, key=lambda s: strategy_sort_key(s, portability[s], s in references))
    return Page(
        title=title,
        generated_at=generated_at(),
        cells=len(own),
        legend=tuple(LegendEntry(v.name, v.glyph, v.label, v.meaning, counts.get(v.name, 0)) for v in VERDICTS),
        sources=tuple(source_row(s) for s in loaded.sources),
        refusals=tuple(r.line() for r in loaded.refusals),
        skipped=len(loaded.skipped),
        migrated=_migrated_text(loaded.migrated),
        superseded=loaded.superseded,
        advisor=advisor_view(
            advice, everywhere, envs, matrix.row_labels(records), homes(frame), groups, recipe_rows(loaded.records)
        ),
        envs=tuple(envs),
        upgrade_default=newest_upgrade(envs),
        runtime_choices=tuple(choices),
        ladder=where,
        divergence=divergence_view(side),
        precision=precision_view(frame, strategy_colours(strategies), recipe_rows(loaded.records)),
        runtimes=tuple(rows),
        replays=len(frame) - len(own),
        replay_runtimes=len({row.label for row in rows}),
        filters=tuple(filters(frame, envs)),
        pivots=tuple(label for label, _ in data["pivots"]),
        charts=tuple(build_charts(own, envs, strategies)),
        environments=tuple(environments([r for r in records if r.kind == EXPORT], envs)),
        references=references_text(own),
        data_json=matrix.dumps_lines(data, safe_json),
        export_times=export_times(frame, envs),
    )
