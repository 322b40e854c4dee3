"""One stored graph judged in this runtime, stage by stage as its exporting cell was: load, run, parity, dynamic,
latency, memory; same tolerance, same comparison, same timer and memory probe."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from harness.artifacts.store import ArtifactStore, Manifest, Sample
from harness.campaign.options import Options
from harness.judge import parity as parity_mod
from harness.judge.measure import peak_rss_of, time_callable
from harness.judge.stages import StageFailed, StageSpec, walk
from harness.record import CellRecord, Parity, Peak, RecordKind, Verdict
from harness.replay.runtimes import Loaded, RuntimeAdapter


@dataclass
class ReplayState:
    manifest: Manifest
    store: ArtifactStore
    adapter: RuntimeAdapter
    opts: Options
    found: Dict[str, Any] = field(default_factory=dict)
    comparisons: List[Dict[str, Any]] = field(default_factory=list)
    graph: Optional[Loaded] = None
    first: Optional[List[np.ndarray]] = None  # the export shape's outputs, from the run stage

    def samples(self, stage: str) -> List[Sample]:
        return [s for s in self.manifest.samples if s.stage == stage]

    def inputs(self, sample: Sample) -> List[np.ndarray]:
        return self.store.arrays(sample.inputs)


def load(s: ReplayState) -> None:
    s.graph = s.adapter.load(str(s.store.graph_path(s.manifest)), s.opts.threads, s.manifest.input_names)
    s.found["ort_providers"] = s.graph.providers


def run(s: ReplayState) -> None:
    s.first = s.graph.run(s.inputs(s.samples("parity")[0]))


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
# against 0.03 s per target for a cell): blocks of at least 2 ms (a cell's: 5 ms), at least 3 of them (a cell's: 5).
REPLAY_MIN_BLOCK_S = 0.002
REPLAY_MIN_SAMPLES = 3


def latency(s: ReplayState) -> None:
    call = s.graph.call(s.inputs(s.samples("parity")[0]))
    timing = time_callable(
        call,
        threads=s.opts.threads,
        budget_s=s.opts.latency_budget_s,
        min_block_s=REPLAY_MIN_BLOCK_S,
        min_samples=REPLAY_MIN_SAMPLES,
    ).timing()
    s.found["latency"] = {s.adapter.target: timing}


def memory(s: ReplayState) -> None:
    peak = Peak(None, "unavailable: device memory is probed through torch, absent from runtime environments")
    if s.adapter.device == "cpu":
        peak = peak_rss_of(s.graph.call(s.inputs(s.samples("parity")[0])))
    s.found["memory"] = {s.adapter.target: peak}


REPLAY_STAGES: Tuple[StageSpec, ...] = (
    StageSpec("load", load, Verdict.LOAD_FAILED),
    StageSpec("run", run, Verdict.RUN_FAILED),
    StageSpec("parity", parity, Verdict.MISMATCH),
    StageSpec("dynamic", dynamic, Verdict.RUN_FAILED, when=lambda s: bool(s.samples("dynamic"))),
    StageSpec("latency", latency, Verdict.HARNESS_ERROR, fatal=False, when=lambda s: s.opts.latency),
    StageSpec("memory", memory, Verdict.HARNESS_ERROR, fatal=False, when=lambda s: s.opts.memory),
)


def replay_blank(
    manifest: Manifest, adapter: RuntimeAdapter, verdict: Verdict, reason: Optional[str] = None
) -> CellRecord:
    """The exporting cell as this runtime sees it, before any stage: its identity and export, this runtime."""
    exported = CellRecord.from_json(manifest.record)
    return exported.with_(
        kind=RecordKind.REPLAY.value,
        runtime=adapter.describe(),
        runtime_fingerprint=adapter.fingerprint(),
        artifact=manifest.digest,
        precision=manifest.precision,
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


def replay_graph(manifest: Manifest, store: ArtifactStore, adapter: RuntimeAdapter, opts: Options) -> CellRecord:
    state = ReplayState(manifest, store, adapter, opts)
    walked = walk(REPLAY_STAGES, state, state.found)
    if state.comparisons and walked.stopped_at not in ("parity", "dynamic"):
        merged = parity_mod.merge(state.comparisons)
        state.found["parity"] = Parity(**{k: v for k, v in merged.items() if k != "ok"})
    blank = replay_blank(manifest, adapter, Verdict.PASS)
    return blank.with_(
        verdict=walked.verdict or Verdict.PASS, reason=walked.reason, stages=walked.stages, **state.found
    )


def _judge(s: ReplayState, outputs: Any, sample: Sample, where: str) -> List[str]:
    result = parity_mod.compare(outputs, s.store.arrays(sample.outputs), s.manifest.atol, s.manifest.rtol)
    s.comparisons.append(result)
    return [] if result["ok"] else [parity_mod.describe_mismatch(result, where)]
