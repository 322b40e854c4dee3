"""The recipe search: for a graph whose conversion misses its tolerance on the newest onnxruntime (the converter
environment's), the fewest nodes kept in float that bring it within tolerance, in a bounded number of conversions.

Nodes are ranked by what their own conversion costs: both graphs are run once with every intermediate tensor
exposed, and a node's cost is how much further its output is from fp32 than its inputs already were (each scaled to
its tensor's range). The float set then grows along that ranking (1, 2, 4, ... nodes) until the graph passes on the
evaluation inputs, and the smallest passing prefix is found by bisection; a search that finds none within its budget
says so with the best it reached. Runs in the converter environment (onnx, onnxruntime; no torch).
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from harness.artifacts.convert import (
    CONVERTERS,
    WEIGHTED_OPS,
    InvalidGraph,
    NotApplicable,
    check,
    converter_of,
    pre_processed,
    scratch_cwd,
    source_checks,
    tolerance,
)
from harness.artifacts.store import MANIFEST, ArtifactStore, Manifest
from harness.judge import parity as parity_mod
from harness.judge.measure import time_callable
from harness.judge.session import OrtSession
from harness.record.precisions import SEARCH_BUDGET, precision_of


class RuntimeRefused(Exception):
    """The onnxruntime that judges the search refuses its starting graph, which the checker passed: no search can
    be judged there, and the failure is that runtime's, not the converter's."""


@dataclass
class Trial:
    kept: Tuple[str, ...]
    graph: Optional[bytes]
    result: Dict[str, Any]  # harness.judge.parity.compare's, the worst over the evaluation inputs
    error: Optional[str] = None  # the conversion's or the runtime's failure

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.result.get("ok"))

    @property
    def excess(self) -> float:
        """How far from passing: the smallest passing atol over the atol (below 1 passes)."""
        if self.error is not None:
            return float("inf")
        return float(self.result["min_passing_atol"]) / max(float(self.result["atol"]), 1e-30)


@dataclass
class Search:
    """One graph's search: its evaluation inputs and outputs, its tolerance, its candidates ranked, its trials."""

    fp32: bytes
    input_names: Tuple[str, ...]
    evaluations: List[Tuple[List[np.ndarray], List[np.ndarray]]]  # (inputs, eager outputs) per evaluation set
    atol: float
    rtol: float
    convert: Callable[..., bytes]  # (nodes kept float, **the converter's options) -> the converted graph
    budget: int = SEARCH_BUDGET
    trials: List[Trial] = field(default_factory=list)
    repaired: Tuple[str, ...] = ()  # nodes kept float because the converter wrote invalid ONNX at them
    options: Dict[str, Any] = field(default_factory=dict)  # converter options the repair chose
    repairs: Tuple[Dict[str, Any], ...] = ()  # options to try, in order, before keeping nodes float

    def judge(self, graph: bytes) -> Dict[str, Any]:
        session = OrtSession(graph, "cpu", 1, input_names=self.input_names)
        results = [
            parity_mod.compare(session.run(inputs), outputs, self.atol, self.rtol)
            for inputs, outputs in self.evaluations
        ]
        return parity_mod.merge(results)

    def trial(self, kept: Sequence[str]) -> Trial:
        kept = self.repaired + tuple(k for k in kept if k not in self.repaired)
        try:
            graph = self.convert(kept, **self.options)
            found = Trial(tuple(kept), graph, self.judge(graph))
        except Exception as exc:  # the converter's or the runtime's own failure
            found = Trial(tuple(kept), None, {}, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}")
        self.trials.append(found)
        return found

    def start(self, feeding: Dict[str, List[str]], made: Optional[bytes] = None) -> Trial:
        """The starting recipe, nothing kept float (`made`: that conversion as already made and checked, which the
        first try judges rather than converting again). Where onnx.checker refuses what the converter wrote and
        names a node of the graph, that node and the nodes feeding it (`feeding`: by node name) are kept float and
        the conversion made again (each try counts against the budget); any other failure of the converter raises:
        it is the conversion's, no search's."""
        untried = list(self.repairs)
        while True:
            try:
                graph = made if made is not None else self.convert(self.repaired, **self.options)
            except InvalidGraph as bad:
                if untried and len(self.trials) + 1 < self.budget:  # the converter's own options first
                    self.trials.append(Trial(self.repaired, None, {}, f"InvalidGraph: {bad}"))
                    self.options = dict(self.options, **untried.pop(0))
                    continue
                named = FAILING_NODE.search(str(bad))
                node = named.group(1) if named else None
                if node not in feeding or node in self.repaired or len(self.trials) + 1 >= self.budget:
                    raise
                self.trials.append(Trial(self.repaired, None, {}, f"InvalidGraph: {bad}"))
                self.repaired += tuple(n for n in [node] + feeding[node] if n not in self.repaired)
                continue
            try:
                judged = self.judge(graph)
            except Exception as exc:  # onnxruntime refuses a valid graph: its own failure (the replays show it)
                raise RuntimeRefused(str(exc).strip().splitlines()[0][:300]) from exc
            found = Trial(self.repaired, graph, judged)
            self.trials.append(found)
            return found

    def left(self) -> int:
        return self.budget - len(self.trials)


# What the search may change of a converter's own settings before it keeps nodes float, where the converter wrote
# invalid ONNX: onnxruntime's float16 converter typed by ONNX's shape inference, when its symbolic one gives up.
CONVERTER_REPAIRS: Dict[str, Tuple[Dict[str, Any], ...]] = {"fp16": ({"symbolic": False},)}
FAILING_NODE = re.compile(r"node name: ([^)\s]+)\)")  # onnx.checker's words for the node it refuses


def run_search(search: Search, ranked: Sequence[str]) -> Optional[Trial]:
    """The smallest passing prefix of `ranked` (never all of it: a graph with nothing converted is no recipe), or
    None; the starting recipe is the search's first trial, and every trial stays in `search.trials`."""
    ranked = [name for name in ranked if name not in search.repaired]
    limit = len(ranked) - 1
    failing, passing = 0, None
    size = 1
    while size <= limit and search.left() > 0:
        if search.trial(ranked[:size]).passed:
            passing = size
            break
        failing = size
        size = min(size * 2, limit) if size < limit else limit + 1
    if passing is None:
        return None
    best = search.trials[-1]
    while passing - failing > 1 and search.left() > 0:
        middle = (failing + passing) // 2
        attempt = search.trial(ranked[:middle])
        if attempt.passed:
            passing, best = middle, attempt
        else:
            failing = middle
    return best


def exposed(graph: bytes) -> Tuple[bytes, List[str]]:
    """The graph with every node's output also a graph output, and those names in topological order."""
    import onnx

    model = onnx.load_from_string(graph)
    have = {o.name for o in model.graph.output}
    names = [out for node in model.graph.node for out in node.output if out]
    for name in names:
        if name not in have:
            model.graph.output.append(onnx.ValueInfoProto(name=name))
    return model.SerializeToString(), names


def intermediates(graph: bytes, input_names: Sequence[str], inputs: Sequence[np.ndarray]) -> Dict[str, np.ndarray]:
    """Every node output of one run, by name (float ones as float64)."""
    blob, _ = exposed(graph)
    session = OrtSession(blob, "cpu", 1, input_names=input_names)
    names = [o.name for o in session.session.get_outputs()]
    values = session.session.run(None, session.feed(inputs))
    return {n: np.asarray(v, dtype=np.float64) for n, v in zip(names, values) if _is_float(v)}


def _is_float(value: Any) -> bool:
    return isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating)


def scaled_error(a: Optional[np.ndarray], b: Optional[np.ndarray]) -> float:
    """Max absolute difference over the fp32 tensor's range (0 where either side is missing or shapes differ)."""
    if a is None or b is None or a.shape != b.shape or not b.size:
        return 0.0
    span = float(np.nanmax(b) - np.nanmin(b)) or float(np.nanmax(np.abs(b))) or 1.0
    diff = np.abs(a - b)
    return float(np.nanmax(diff)) / span if np.isfinite(diff).all() else float("inf")


def rank_nodes(
    fp32: bytes, converted: bytes, input_names: Sequence[str], inputs: Sequence[np.ndarray], candidates: Sequence[Any]
) -> List[str]:
    """The candidate nodes (onnx NodeProtos of the graph the converter reads), costliest first: the error a node's
    output carries beyond the worst of its inputs'."""
    want = intermediates(fp32, input_names, inputs)
    got = intermediates(converted, input_names, inputs)
    costs = []
    for node in candidates:
        out = max((scaled_error(got.get(o), want.get(o)) for o in node.output), default=0.0)
        into = max((scaled_error(got.get(i), want.get(i)) for i in node.input), default=0.0)
        costs.append((out - into, node.name))
    costs.sort(key=lambda c: -c[0])
    return [name for cost, name in costs if name]


def speed_and_size(
    fp32: bytes, graph: bytes, input_names: Sequence[str], inputs: Sequence[np.ndarray]
) -> Dict[str, Any]:
    """The recipe's graph against fp32 on this onnxruntime, side by side: latency and size ratios."""
    timings = []
    for blob in (fp32, graph):
        session = OrtSession(blob, "cpu", 1, input_names=input_names)
        timings.append(time_callable(session.timed_call(inputs), threads=1, budget_s=0.05, min_samples=5).median)
    return {
        "latency_vs_fp32": timings[1] / timings[0] if timings[0] > 0 else None,
        "bytes_vs_fp32": len(graph) / len(fp32),
    }


def evaluations(manifest: Manifest, store: ArtifactStore) -> List[Tuple[List[np.ndarray], List[np.ndarray]]]:
    return [(store.arrays(s.inputs), store.arrays(s.outputs)) for s in manifest.samples if s.stage == "parity"]


def feeders(nodes: Sequence[Any]) -> Dict[str, List[str]]:
    """Each named node's name, with the names of the nodes whose outputs it reads."""
    made_by = {out: n.name for n in nodes for out in n.output if n.name}
    return {n.name: [made_by[i] for i in n.input if i in made_by] for n in nodes if n.name}


def graph_nodes(path: str) -> List[Any]:
    import onnx

    return list(onnx.load(path).graph.node)


def prepared_path(path: str, precision: str, tmp: str) -> str:
    """The fp32 graph the recipe's converter reads: for int8-static, after quant_pre_process."""
    if precision_of(precision).tolerance != "int8-static":
        return path
    return pre_processed(path, os.path.join(tmp, "pre.onnx"))


def candidates_of(nodes: Sequence[Any], precision: str) -> List[Any]:
    """The nodes a recipe converts, so the nodes it may keep float: the weighted ops for the int8 recipes, every
    named node for fp16."""
    if precision_of(precision).tolerance.startswith("int8"):
        return [n for n in nodes if n.op_type in WEIGHTED_OPS and n.name]
    return [n for n in nodes if n.name]


@dataclass(frozen=True)
class Found:
    """A search's answer: the recipe's graph (None when the recipe it starts from passes as is, or none passed),
    and what the record says of it."""

    graph: Optional[bytes]
    converter: str
    recipe: Dict[str, Any]
    passed: bool


def find_recipe(manifest: Manifest, store: ArtifactStore, precision: str, budget: int = SEARCH_BUDGET) -> Found:
    """The fewest nodes kept float for which `precision`'s starting recipe passes on this onnxruntime."""
    start = precision_of(precision).searched_from
    make = CONVERTERS[start]
    atol, rtol = tolerance(manifest, store, start)
    cases = evaluations(manifest, store)
    with tempfile.TemporaryDirectory() as tmp:
        path = prepared_path(str(store.graph_path(manifest)), start, tmp)
        fp32 = Path(path).read_bytes()
        nodes = graph_nodes(path)

        level = source_checks(str(store.graph_path(manifest)), manifest.graph)  # the graph as exported

        def convert(keep: Sequence[str], **options: Any) -> bytes:
            with scratch_cwd():
                graph = make(path, manifest, store, keep, prepared=True, **options).graph
            check(graph, converter_of(start), level)
            return graph

        search = Search(fp32, manifest.input_names, cases, manifest.atol, manifest.rtol, convert, budget)
        search.repairs = CONVERTER_REPAIRS.get(start, ())
        own = search.judge(fp32)
        if not own["ok"]:
            raise NotApplicable(
                f"the fp32 graph itself misses on this onnxruntime (max abs {own['max_abs']:.3g}): no {start} recipe "
                "can pass"
            )
        search.atol, search.rtol = atol, rtol
        made = _made(manifest, store, start)
        first = search.start(feeders(nodes), made)  # the recipe as it is; a converter's failure is the conversion's
        ranked: List[str] = []
        ranking = "by the error each node's own conversion adds"
        if not first.passed:
            candidates = candidates_of(nodes, start)
            try:
                ranked = rank_nodes(fp32, first.graph, manifest.input_names, cases[0][0], candidates)
            except Exception as exc:  # onnxruntime refused the graph with its intermediates exposed: graph order
                ranked = [n.name for n in candidates]
                ranking = f"in graph order (the intermediates could not be exposed: {type(exc).__name__})"
        found = first if first.passed else run_search(search, ranked)
    floated = len(nodes) - len(candidates_of(nodes, start))  # what the recipe never converts
    if not precision_of(start).tolerance.startswith("int8"):
        floated = sum(n.op_type in fp16_blocked_ops() for n in nodes)
    answer = _answer(search, found, start, nodes, converter_of(start), cases[0][0], manifest.input_names)
    answer.recipe["float_nodes"] = floated + len(answer.recipe["kept_float"])
    answer.recipe["candidates"] = len(candidates_of(nodes, start))
    answer.recipe["ranking"] = ranking
    return answer


def _made(manifest: Manifest, store: ArtifactStore, start: str) -> Optional[bytes]:
    """The starting conversion of this graph as the conversions stored it (made from this very graph), or None."""
    if not store.has(manifest.env, manifest.cell_id, start):
        return None
    made = store.read(store.folder(manifest.env, manifest.cell_id, start) / MANIFEST)
    return store.graph_path(made).read_bytes() if made.source == manifest.digest else None


def fp16_blocked_ops() -> Sequence[str]:
    """The op types onnxruntime's float16 converter leaves in float by default."""
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST

    return tuple(DEFAULT_OP_BLOCK_LIST)


def _answer(
    search: Search,
    found: Optional[Trial],
    start: str,
    nodes: Sequence[Any],
    converter: str,
    inputs: Sequence[np.ndarray],
    input_names: Sequence[str],
) -> Found:
    ops = {n.name: n.op_type for n in nodes}
    tried = [t for t in search.trials if t.error is None]
    best = found or (min(tried, key=lambda t: t.excess) if tried else search.trials[-1])
    recipe: Dict[str, Any] = {
        "from": start,
        "kept_float": [[name, ops.get(name, "?")] for name in best.kept],
        "nodes": len(nodes),
        "conversions": len(search.trials),
        "budget": search.budget,
        "found": found is not None,
        "max_abs": best.result.get("max_abs"),
        "min_passing_atol": best.result.get("min_passing_atol"),
        "atol": search.atol,
        "psnr": best.result.get("psnr"),
        "error": best.error,
        "options": dict(search.options),
    }
    graph = found.graph if found is not None and (found.kept or search.options) else None  # else: the start as is
    if graph is not None:
        recipe.update(speed_and_size(search.fp32, graph, input_names, inputs))
    return Found(graph, converter, recipe, found is not None)
