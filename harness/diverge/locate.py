"""The two jobs of a divergence, as their records: trace (in the trusted runtime's environment: its intermediates
stored beside the graph) and locate (in the mismatching runtime's: the same graph, or its converted one, run with
every intermediate exposed on the same inputs, compared tensor by tensor in the graph's order).

A job never raises for the runtime's sake: what it cannot do is its record's reason (verdict not_applicable).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from harness.artifacts.jobs import range_tolerance
from harness.artifacts.store import MANIFEST, ArtifactStore, Manifest, Sample
from harness.diverge.compare import CARRIERS, first_divergence, output_span
from harness.diverge.trace import Exposed, Unexposable, read_trace, run_exposed, samples_of, store_trace, trace_path
from harness.judge import parity as parity_mod
from harness.judge.wire import Node, WireError, nodes
from harness.record import CellRecord, Divergence, RecordKind, Stage, Verdict
from harness.record.precisions import RUNTIME, precision_of, stored_precision
from harness.replay.judge import INFERENCE_TOLERANCE, replay_blank
from harness.replay.runtimes import RuntimeAdapter

TRACE_LIMIT_BYTES = 256 << 20  # one trusted run's intermediates, uncompressed: a benchmark-size graph's are more


def trace_job(store: ArtifactStore, manifest: Manifest, stages: Sequence[str], adapter: RuntimeAdapter) -> CellRecord:
    """A trusted runtime's intermediates of one graph on each input set of the stages, stored; its `trace` record."""
    start = time.monotonic()
    errors: List[str] = []
    for sample in samples_of(manifest, stages):
        body = store_trace(store, manifest, adapter, sample, TRACE_LIMIT_BYTES)
        if body.get("error"):
            errors.append(f"{sample.label}: {body['error']}")
    stage = Stage("trace", "failed" if errors else "ok", seconds=round(time.monotonic() - start, 4))
    verdict, reason = (Verdict.NOT_APPLICABLE, "; ".join(errors)) if errors else (Verdict.PASS, None)
    return trace_blank(manifest, adapter, verdict, reason).with_(stages=(stage,))


def trace_blank(manifest: Manifest, adapter: RuntimeAdapter, verdict: Verdict, reason: Optional[str]) -> CellRecord:
    """The stored graph as the trusted runtime saw it when it traced it: a replay's blank, of kind `trace`."""
    return replay_blank(manifest, adapter, verdict, reason).with_(kind=RecordKind.TRACE.value)


def divergence_blank(
    mismatch: CellRecord, divergence: Divergence, verdict: Verdict, reason: Optional[str]
) -> CellRecord:
    """The mismatch's record as a divergence: its identity, runtime, precision and parity, and where it parts."""
    return mismatch.with_(
        kind=RecordKind.DIVERGENCE.value,
        verdict=verdict,
        reason=reason,
        stages=(),
        divergence=divergence,
        latency={},
        memory={},
        ort_placement=None,
        traceback=None,
    )


def locate_job(
    store: ArtifactStore,
    mismatch: CellRecord,
    trusted: Tuple[str, str],
    trusted_precision: str,
    stages: Sequence[str],
    adapter: RuntimeAdapter,
) -> CellRecord:
    """The first node of the mismatching graph to part from the trusted run, as a `divergence` record."""
    start = time.monotonic()
    manifest, adapter = _as_judged(store, mismatch, adapter)
    source = store.read(store.folder(mismatch.env, mismatch.cell_id, trusted_precision) / "manifest.json")
    base = Divergence(f"{trusted[0]} {trusted[1]}", trusted_precision)
    found, reason = _locate(store, manifest, source, trusted, stages, adapter, base)
    stage = Stage("locate", "ok" if reason is None else "failed", seconds=round(time.monotonic() - start, 4))
    verdict = Verdict.PASS if reason is None else Verdict.NOT_APPLICABLE
    return divergence_blank(mismatch, found, verdict, reason).with_(
        stages=(stage,), runtime_fingerprint=adapter.fingerprint()
    )


def _as_judged(store: ArtifactStore, mismatch: CellRecord, adapter: RuntimeAdapter) -> Tuple[Manifest, Any]:
    """The graph as the mismatching judgement saw it: its own, or for a runtime precision (runtime-bf16) the fp32
    graph computed at that precision by the runtime, with that precision's tolerance."""
    made = precision_of(mismatch.precision)
    manifest = store.read(store.folder(mismatch.env, mismatch.cell_id, stored_precision(mismatch.precision)) / MANIFEST)
    if made.made_by != RUNTIME:
        return manifest, adapter
    row = made.tolerance
    if row == "runtime":
        row = INFERENCE_TOLERANCE.get(mismatch.runtime_settings.get("inference_precision", ""), "fp32")
    atol, rtol = range_tolerance(manifest, store, row)
    return replace(manifest, atol=atol, rtol=rtol), AtHint(adapter, made.hint)


class AtHint:
    """A runtime that computes every graph it loads at one inference precision (None: its default)."""

    def __init__(self, adapter: RuntimeAdapter, hint: Optional[str]) -> None:
        self.adapter = adapter
        self.hint = hint

    def load(
        self, path: str, threads: int, input_names: Sequence[str] = (), hint: Any = None, arena: bool = True
    ) -> Any:
        return self.adapter.load(path, threads, input_names, self.hint, arena)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.adapter, name)


def _locate(
    store: ArtifactStore,
    manifest: Manifest,
    source: Manifest,
    trusted: Tuple[str, str],
    stages: Sequence[str],
    adapter: RuntimeAdapter,
    base: Divergence,
) -> Tuple[Divergence, Optional[str]]:
    graph = store.graph_path(manifest).read_bytes()
    try:
        order = nodes(graph)
        trusted_order = nodes(store.graph_path(source).read_bytes())
    except WireError as exc:
        return base, f"the stored graph does not read as ONNX: {exc}"
    here = f"{adapter.name} {adapter.version}"
    for sample in samples_of(manifest, stages):
        trace = read_trace(trace_path(store, source, trusted, sample))
        if trace is None:
            return base, f"no trusted run of {base.trusted} is stored for {sample.label}: run its trace phase first"
        if trace.get("error"):
            return base, f"{base.trusted} cannot expose its intermediates ({trace['error']})"
        try:
            run = run_exposed(adapter, graph, store.arrays(sample.inputs), manifest)
        except Unexposable as why:
            return base, f"{here} cannot expose its intermediates: {why}"
        fused = None
        if _outputs_pass(run.tensors, run.outputs, store.arrays(sample.outputs), manifest):
            fused, run = _bisect(adapter, graph, order, store, sample, manifest)
            if run is None:
                continue
        tensors = {n: store.array(d) for n, d in dict(trace["tensors"]).items()}
        span = output_span(store.arrays(sample.outputs))
        exposed = order if fused is None else order[: fused.index]  # the graph's own outputs come after them
        found = first_divergence(exposed, run.tensors, tensors, manifest.atol, manifest.rtol, span)
        where = Divergence(base.trusted, base.trusted_precision, sample.label, nodes=len(order))
        if found.node is None and fused is not None:
            return _fused(where, fused, found.compared), None
        if found.node is None:
            reason = (
                f"no node's outputs part from {base.trusted} beyond the tolerance scaled to each tensor "
                f"({found.compared} of {len(order)} nodes compared): the outputs differ from the reference by "
                "little more than the tolerance on both sides"
            )
            return _with(where, compared=found.compared), reason
        return _finding(where, found, trusted_order), None
    return Divergence(base.trusted, base.trusted_precision, nodes=len(order)), (
        f"the mismatch does not show in {here} with every intermediate exposed: it computes the graph otherwise "
        "when its intermediates are outputs (a fused or reordered graph), so no node can be pointed at"
    )


def _bisect(
    adapter: RuntimeAdapter, graph: bytes, order: Sequence[Node], store: ArtifactStore, sample: Sample, m: Manifest
) -> Tuple[Optional[Node], Optional[Exposed]]:
    """Where exposing every intermediate hides the mismatch (the runtime fuses differently when they are outputs):
    the longest prefix of nodes whose outputs can be exposed with the mismatch still there, found by bisection, and
    the node after it, whose exposure hides it; (None, None) when even one node's exposure hides it, or none does."""
    inputs, reference = store.arrays(sample.inputs), store.arrays(sample.outputs)

    def shows(k: int) -> Optional[Exposed]:
        only = [o for node in order[:k] for o in node.outputs]
        try:
            run = run_exposed(adapter, graph, inputs, m, only)
        except Unexposable:
            return None
        return None if _outputs_pass(run.tensors, run.outputs, reference, m) else run

    low, high = 0, len(order)  # the mismatch shows with none exposed (the replay's verdict), not with all
    best = shows(0)
    if best is None:
        return None, None
    while high - low > 1:
        middle = (low + high) // 2
        run = shows(middle)
        if run is None:
            high = middle
        else:
            low, best = middle, run
    return order[low], best


def _fused(where: Divergence, node: Node, compared: int) -> Divergence:
    note = (
        "fused: with every node before it exposed the mismatch stays and they agree with the trusted run; exposing "
        "this node's outputs too hides the mismatch (the runtime computes it otherwise when it is not fused)"
    )
    return _with(
        where,
        node=node.name,
        op_type=node.op_type,
        domain=node.domain,
        preceding=node.index,
        compared=compared,
        tensor=node.outputs[0] if node.outputs else "",
        note=note,
    )


def _outputs_pass(got: Dict[str, Any], outputs: Sequence[str], reference: List[np.ndarray], m: Manifest) -> bool:
    return bool(parity_mod.compare([got[o] for o in outputs], reference, m.atol, m.rtol)["ok"])


def _with(divergence: Divergence, **changes: Any) -> Divergence:
    return replace(divergence, **changes)


def _finding(where: Divergence, found: Any, trusted_order: Sequence[Any]) -> Divergence:
    node, diff = found.node, found.diff
    carries = None
    if node.op_type in CARRIERS and found.tensor != found.trusted_tensor:
        producer = next((n for n in trusted_order if found.trusted_tensor in n.outputs), None)
        carries = producer.op_type if producer is not None else None
    return _with(
        where,
        node=node.name,
        op_type=node.op_type,
        domain=node.domain,
        preceding=node.index,
        compared=found.compared,
        tensor=found.tensor,
        trusted_tensor=found.trusted_tensor,
        carries=carries,
        max_abs=diff.max_abs if np.isfinite(diff.max_abs) else None,
        tolerance=diff.tolerance,
        differing=diff.differing,
        size=diff.size,
        note=diff.note,
    )
