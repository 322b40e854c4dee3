"""Where the mismatching graphs first go wrong (records of kind `divergence`, harness diverge): per family, a table of
runtime (or precision) by the op type of the first diverging node, with counts; the same findings behind each
mismatching square of the "where each graph runs" view and in each mismatching cell's details."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple

from harness.record import CellRecord, Divergence, RecordKind, Verdict, ladder_key, split_job_id
from harness.report.vocab import family_sort_key, precision_sort_key, runtime_label

DIVERGENCE = RecordKind.DIVERGENCE.value
SIDE_KINDS = (RecordKind.TRACE.value, DIVERGENCE)  # records about other records: not cells of the matrix
STATED = "no node: a stated reason"
MAX_REASONS = 4


@dataclass(frozen=True)
class DivergenceRow:
    label: str  # "openvino 2023.3.0 · fp32 against onnxruntime 1.32.0"
    counts: Tuple[int, ...]  # per op column
    total: int


@dataclass(frozen=True)
class DivergenceFamily:
    family: str
    ops: Tuple[str, ...]  # the op types of the first diverging nodes, most frequent first; STATED last
    rows: Tuple[DivergenceRow, ...]
    reasons: Tuple[Tuple[int, str], ...]  # (how many, the reason) for the mismatches no node was found for


@dataclass(frozen=True)
class DivergenceView:
    families: Tuple[DivergenceFamily, ...]
    records: int
    located: int


def op_label(d: Divergence) -> str:
    """ "GridSample", "com.microsoft::GridSample", "DequantizeLinear of Mul", "Transpose (fused)"; STATED for none."""
    if d.node is None or d.op_type is None:
        return STATED
    label = d.op_type if not d.domain else f"{d.domain}::{d.op_type}"
    if d.carries:
        label += f" of {d.carries}"
    if d.note and d.note.startswith("fused"):
        label += " (fused)"
    return label


def trusted_label(d: Divergence) -> str:
    """The trusted runtime as the page spells it ("OpenVINO 2026.4.1"), with its precision when not the graph's."""
    name, _, version = d.trusted.partition(" ")
    return runtime_label(name, version)


def judged_key(record: CellRecord) -> Tuple[Any, ...]:
    """What a divergence record and the mismatching record it locates share."""
    return (record.env, record.cell_id, record.precision, record.runtime.name, str(record.runtime.version))


def twin_divergences(records: Sequence[CellRecord], side: Sequence[CellRecord]) -> List[CellRecord]:
    """The divergence of each twin's mismatch (a record judged with another job: the same graph but for the
    exporter's version), as the divergence of the job it was judged with found it, under the twin's identity."""
    found = {judged_key(r): r for r in divergences(side)}
    copies = []
    for record in records:
        if record.verdict != Verdict.MISMATCH or not record.judged_with:
            continue
        env, cell, _ = split_job_id(record.judged_with)
        first = found.get((env, cell, record.precision, record.runtime.name, str(record.runtime.version)))
        if first is not None:
            identity = ("env", "family", "case", "params", "strategy", "opset", "exporter", "shape_mode", "cell_id")
            copies.append(first.with_(**{k: getattr(record, k) for k in identity}, judged_with=record.judged_with))
    return copies


def divergences(records: Sequence[CellRecord]) -> List[CellRecord]:
    return [r for r in records if r.kind == DIVERGENCE and r.divergence is not None]


def _row_key(record: CellRecord) -> Tuple[Any, ...]:
    d = record.divergence
    rank = ladder_key(record.runtime.name, record.runtime.version)
    return (rank, precision_sort_key(record.precision), d.trusted)


def divergence_view(records: Sequence[CellRecord]) -> DivergenceView:
    found = divergences(records)
    families = []
    for family in sorted({r.family for r in found}, key=family_sort_key):
        mine = [r for r in found if r.family == family]
        ops = Counter(op_label(r.divergence) for r in mine)
        columns = sorted((o for o in ops if o != STATED), key=lambda o: (-ops[o], o)) + [STATED] * (STATED in ops)
        rows: Dict[Tuple[Any, ...], Tuple[str, Counter]] = {}
        for r in sorted(mine, key=_row_key):
            runtime = runtime_label(r.runtime.name, r.runtime.version)
            label = f"{runtime} · {r.precision} against {trusted_label(r.divergence)}"
            rows.setdefault(_row_key(r), (label, Counter()))[1][op_label(r.divergence)] += 1
        table = tuple(
            DivergenceRow(label, tuple(c.get(o, 0) for o in columns), sum(c.values())) for label, c in rows.values()
        )
        reasons = Counter(str(r.reason) for r in mine if r.divergence.node is None)
        top = tuple((n, text) for text, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:MAX_REASONS])
        families.append(DivergenceFamily(family, tuple(columns), table, top))
    located = sum(r.divergence.node is not None for r in found)
    return DivergenceView(tuple(families), len(found), located)


def first_nodes(records: Sequence[CellRecord]) -> Dict[Tuple[Any, ...], Counter]:
    """The first diverging nodes of the fp32 graphs by the ladder's square: (family, strategy, env, opset, exporter,
    device, runtime) -> Counter of "GridSample (against onnxruntime 1.32.0)"."""
    found: Dict[Tuple[Any, ...], Counter] = {}
    for r in divergences(records):
        if r.precision == "fp32":
            runtime = runtime_label(r.runtime.name, r.runtime.version)
            key = (r.family, r.strategy, r.env, r.opset, r.exporter, r.device, runtime)
            found.setdefault(key, Counter())[f"{op_label(r.divergence)} (against {trusted_label(r.divergence)})"] += 1
    return found


def detail_of(record: CellRecord) -> List[Any]:
    """A mismatching cell's divergence as its details panel shows it: [trusted, where, sample, max abs difference,
    tolerance there, elements beyond it, of how many, note, reason]."""
    d = record.divergence
    where = d.where or "no node found"
    return [trusted_label(d), where, d.sample, d.max_abs, d.tolerance, d.differing, d.size, d.note, record.reason]
