"""One stored graph judged in this runtime, stage by stage as its exporting cell was: load, run, parity, dynamic,
latency, memory; same tolerance, same comparison, same timer and memory probe."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from harness.artifacts.jobs import range_tolerance
from harness.artifacts.store import ArtifactStore, Manifest, Sample
from harness.campaign.options import Options
from harness.judge import parity as parity_mod
from harness.judge.measure import (
    FOOTPRINT_METHOD,
    FRESH_FOOTPRINT_METHOD,
    FRESH_WORKING_SET_METHOD,
    WORKING_SET_METHOD,
    Footprint,
    time_callable,
    working_set_of,
)
from harness.judge.stages import StageFailed, StageSpec, walk
from harness.judge.zygote import in_child
from harness.record import WORKING_SET, CellRecord, Parity, Peak, RecordKind, Verdict
from harness.record.precisions import RUNTIME, precision_of
from harness.replay.runtimes import Loaded, RuntimeAdapter


@dataclass
class ReplayState:
    manifest: Manifest
    store: ArtifactStore
    adapter: RuntimeAdapter
    opts: Options
    precision: str = "fp32"  # the graph's own, or a runtime precision it is computed at (runtime-bf16)
    found: Dict[str, Any] = field(default_factory=dict)
    comparisons: List[Dict[str, Any]] = field(default_factory=list)
    graph: Optional[Loaded] = None
    first: Optional[List[np.ndarray]] = None  # the export shape's outputs, from the run stage
    footprint: Optional[Footprint] = None
    tolerance: Tuple[float, float] = (0.0, 0.0)

    @property
    def hint(self) -> Optional[str]:
        """The inference precision asked of the runtime: f32 for a graph judged at its own precision."""
        made = precision_of(self.precision)
        return made.hint if made.made_by == RUNTIME else "f32"

    @property
    def costed(self) -> bool:
        """Whether this graph is timed and its memory measured: not a correctness sweep's (Options.costs)."""
        return self.opts.costs(self.manifest.tags)

    def samples(self, stage: str) -> List[Sample]:
        return [s for s in self.manifest.samples if s.stage == stage]

    def inputs(self, sample: Sample) -> List[np.ndarray]:
        return self.store.arrays(sample.inputs)


def load(s: ReplayState) -> None:
    s.footprint = Footprint()
    s.graph = s.adapter.load(str(s.store.graph_path(s.manifest)), s.opts.threads, s.manifest.input_names, s.hint)
    s.found["ort_providers"] = s.graph.providers
    s.found["runtime_settings"] = dict(s.graph.settings)
    s.tolerance = _tolerance(s)


def _tolerance(s: ReplayState) -> Tuple[float, float]:
    """The graph's own tolerance, or a runtime precision's: at its default, that of the precision it chose."""
    made = precision_of(s.precision)
    if made.made_by != RUNTIME:
        return s.manifest.atol, s.manifest.rtol
    row = made.tolerance
    if row == "runtime":
        row = INFERENCE_TOLERANCE.get(s.graph.settings.get("inference_precision", ""), "fp32")
    return range_tolerance(s.manifest, s.store, row)


# What a runtime computing at its default precision is judged by: the tolerance of the precision it chose.
INFERENCE_TOLERANCE = {"f32": "fp32", "bf16": "bf16", "f16": "fp16"}


def run(s: ReplayState) -> None:
    s.first = s.graph.run(s.inputs(s.samples("parity")[0]))
    if s.opts.memory and s.costed and s.adapter.device == "cpu":
        s.found["memory"] = {
            s.adapter.target: s.footprint.peak(FRESH_FOOTPRINT_METHOD if in_child() else FOOTPRINT_METHOD)
        }


def parity(s: ReplayState) -> None:
    first, *others = s.samples("parity")
    failures = _judge(s, s.first, first, f"{s.adapter.name} vs reference")
    for sample in others:
        failures += _judge(s, s.graph.run(s.inputs(sample)), sample, sample.label)
    if failures:
        raise StageFailed(Verdict.MISMATCH, "; ".join(failures))


def dynamic(s: ReplayState) -> None:
    failures: List[str] = []
    for sample in s.samples("dynamic"):
        failures += _judge(s, s.graph.run(s.inputs(sample)), sample, sample.label)
    if failures:
        raise StageFailed(Verdict.MISMATCH, "; ".join(failures))


# Replays time each graph with the exporting cells' timer on a smaller budget (--latency-budget, 0.01 s by default,
# against 0.03 s per target for a cell): blocks of at least 2 ms (a cell's: 5 ms), at least 3 of them (a cell's: 5),
# after one warm-up call (a cell's: 2): the session has run in the run and parity stages already.
REPLAY_MIN_BLOCK_S = 0.002
REPLAY_MIN_SAMPLES = 3
REPLAY_WARMUP = 1


def latency(s: ReplayState) -> None:
    call = s.graph.call(s.inputs(s.samples("parity")[0]))
    timing = time_callable(
        call,
        threads=s.opts.threads,
        budget_s=s.opts.latency_budget_s,
        min_block_s=REPLAY_MIN_BLOCK_S,
        min_samples=REPLAY_MIN_SAMPLES,
        warmup=REPLAY_WARMUP,
    ).timing()
    s.found["latency"] = {s.adapter.target: timing}


def memory(s: ReplayState) -> None:
    """The working set: one run's own growth in a session with its arena off (onnxruntime), or one more run
    (OpenVINO, which allocates at compile time); the footprint was taken through load and the first run."""
    target = s.adapter.target
    if s.adapter.device != "cpu":
        unavailable = Peak(None, "unavailable: device memory is probed through torch, absent from runtime environments")
        s.found["memory"] = {target: unavailable, target + WORKING_SET: unavailable}
        return
    inputs = s.inputs(s.samples("parity")[0])
    path = str(s.store.graph_path(s.manifest))
    if s.adapter.name == "onnxruntime":
        lean = s.adapter.load(path, s.opts.threads, s.manifest.input_names, arena=False)
        method = FRESH_WORKING_SET_METHOD if in_child() else WORKING_SET_METHOD
    else:
        lean, method = s.graph, OPENVINO_WORKING_SET
    s.found.setdefault("memory", {})[target + WORKING_SET] = working_set_of(lean.call(inputs), method)


OPENVINO_WORKING_SET = "rss-hwm: one run after a warm-up run (OpenVINO allocates its buffers when it compiles)"


def _uncosted(s: ReplayState) -> Optional[str]:
    return s.opts.uncosted(s.manifest.tags)


REPLAY_STAGES: Tuple[StageSpec, ...] = (
    StageSpec("load", load, Verdict.LOAD_FAILED),
    StageSpec("run", run, Verdict.RUN_FAILED),
    # The working set right after the first run, as a process that loads the graph and runs it once has it: after
    # the latency stage's hundreds of runs, a run's buffers fit in the holes they left and the set reads 30% less.
    StageSpec("memory", memory, Verdict.HARNESS_ERROR, False, lambda s: s.opts.memory and s.costed, _uncosted),
    StageSpec("parity", parity, Verdict.MISMATCH),
    StageSpec("dynamic", dynamic, Verdict.RUN_FAILED, when=lambda s: bool(s.samples("dynamic"))),
    StageSpec("latency", latency, Verdict.HARNESS_ERROR, False, lambda s: s.opts.latency and s.costed, _uncosted),
)


def replay_blank(
    manifest: Manifest,
    adapter: RuntimeAdapter,
    verdict: Verdict,
    reason: Optional[str] = None,
    precision: Optional[str] = None,
) -> CellRecord:
    """The exporting cell as this runtime sees it, before any stage: its identity and export, this runtime, the
    precision judged (the graph's own unless a runtime precision)."""
    exported = CellRecord.from_json(manifest.record)
    return exported.with_(
        kind=RecordKind.REPLAY.value,
        runtime=adapter.describe(),
        runtime_fingerprint=adapter.fingerprint(),
        artifact=manifest.digest,
        precision=precision or manifest.precision,
        converter=manifest.converter,
        verdict=verdict,
        reason=reason,
        stages=(),
        parity=None,
        eager_parity=None,
        latency={},
        memory={},
        ort_providers=(),
        ort_placement=None,
        traceback=None,
    )


def warm_up(adapter: RuntimeAdapter) -> None:
    """The runtime initialised and this module's own first calls paid, in the zygote before it forks: numpy loads
    parts of itself on first use (a percentile loads numpy.ma, 40 ms), and each child would pay that again."""
    adapter.initialise()
    outputs = [np.zeros((1, 1, 2, 2), np.float32)]
    parity_mod.compare(outputs, outputs, 0.0, 0.0)
    time_callable(lambda: None, threads=1, budget_s=0.0, min_block_s=0.0, min_samples=1)
    working_set_of(lambda: None)


def replay_stored(
    manifest: Manifest,
    root: Path,
    arrays: Dict[str, np.ndarray],
    adapter: RuntimeAdapter,
    opts: Options,
    precision: str,
) -> CellRecord:
    """replay_graph over the artifacts folder at `root`, its samples' `arrays` already read: what a zygote's child is
    sent (the worker's cache of arrays, which many graphs share, stays in the worker)."""
    return replay_graph(manifest, ArtifactStore(root).remember(arrays), adapter, opts, precision)


def replay_graph(
    manifest: Manifest, store: ArtifactStore, adapter: RuntimeAdapter, opts: Options, precision: Optional[str] = None
) -> CellRecord:
    state = ReplayState(manifest, store, adapter, opts, precision or manifest.precision)
    cannot = adapter.cannot(state.hint)
    if cannot:
        return replay_blank(manifest, adapter, Verdict.NOT_APPLICABLE, f"{state.precision}: {cannot}", state.precision)
    walked = walk(REPLAY_STAGES, state, state.found)
    if state.comparisons and walked.stopped_at not in ("parity", "dynamic"):
        merged = parity_mod.merge(state.comparisons)
        state.found["parity"] = Parity(**{k: v for k, v in merged.items() if k != "ok"})
    blank = replay_blank(manifest, adapter, Verdict.PASS, precision=state.precision)
    return blank.with_(
        verdict=walked.verdict or Verdict.PASS, reason=walked.reason, stages=walked.stages, **state.found
    )


def _judge(s: ReplayState, outputs: Any, sample: Sample, where: str) -> List[str]:
    atol, rtol = s.tolerance
    result = parity_mod.compare(outputs, s.store.arrays(sample.outputs), atol, rtol)
    s.comparisons.append(result)
    return [] if result["ok"] else [parity_mod.describe_mismatch(result, where)]
