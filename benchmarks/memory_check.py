"""The memory a replay records, checked a second, independent way: a fresh process per graph that loads it in the
runtime environment's onnxruntime and runs it once, measured by its resident set (no harness code in that process).

    python3 benchmarks/memory_check.py [RESULTS_DIR] [--runtime ort1.32] [--case stn] [--env torch1.12]

For each replayed fp32 graph of the selection (static, the highest opset): the record's footprint and working set
beside the fresh process's, once the runtime is initialised by a one-node graph (its own baseline, shown apart: a
replay worker's zygote pays it once, before its first graph)
  - footprint: its resident set after the session's first run minus before the session was created, and
  - working set: a session with its arena off runs once (after a warm-up run); the kernel's high-water mark,
    reset before that run (writing 5 to /proc/self/clear_refs), minus the resident set then. Sampling the resident
    set by a thread instead cannot resolve the STN's 0.15 MB: it reads 0 to 0.4 MB from one run to the next.
Markdown on stdout.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ladder_table import newest_records  # noqa: E402

from harness.artifacts.store import ArtifactStore  # noqa: E402

# Runs in the runtime environment's Python: onnxruntime, numpy and the standard library only.
FRESH = r"""
import ctypes, json, sys, threading, time
import numpy as np
import onnxruntime as ort

PAGE = 4096

def trim():
    ctypes.CDLL("libc.so.6").malloc_trim(0)

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE

graph, names, paths, tiny = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
feeds = {n: np.load(p) for n, p in zip(names, paths)}

def session(arena):
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads, so.enable_cpu_mem_arena = 1, 1, arena
    s = ort.InferenceSession(graph, sess_options=so, providers=["CPUExecutionProvider"])
    declared = [i.name for i in s.get_inputs()]
    return s, {n: feeds[n] for n in declared if n in feeds}

start = rss()  # the runtime initialised by a one-node graph first: its own baseline, then this graph's
warm = ort.InferenceSession(tiny, providers=["CPUExecutionProvider"])
warm.run(None, {"x": np.zeros((1,), np.float32)})
del warm
baseline = rss() - start
trim()
before = rss()
s, feed = session(True)
s.run(None, feed)
footprint = rss() - before
del s
lean, feed = session(False)
lean.run(None, feed)
def status_kib(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(key + ":"))
trim()  # freed heap back to the system, so that the run's own pages show
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # the high-water mark reset to the resident set now
start = status_kib("VmRSS")
lean.run(None, feed)
peak = [status_kib("VmHWM")]
start *= 1024
peak[0] *= 1024
print(json.dumps({"footprint": footprint, "working_set": max(0, peak[0] - start), "baseline": baseline}))
"""


def tiny_graph(path: Path) -> None:
    """A one-node graph (x + x) that initialises the runtime before the graph measured."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "tiny", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7), str(path))


def fresh(python: str, graph: Path, names, arrays) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny.onnx"
        tiny_graph(tiny)
        paths = []
        for i, array in enumerate(arrays):
            path = Path(tmp) / f"{i}.npy"
            np.save(path, array)
            paths.append(str(path))
        out = subprocess.run(
            [python, "-c", FRESH, str(graph), json.dumps(list(names)), json.dumps(paths), str(tiny)],
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(out.stdout)


def mb(value) -> str:
    return "—" if value is None else f"{value / 2**20:.2f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results")
    parser.add_argument("--artifacts", default="artifacts")
    parser.add_argument("--runtime", default="ort1.32")
    parser.add_argument("--case", default="stn")
    parser.add_argument("--env", default="torch1.12")
    args = parser.parse_args(argv)
    python = str(Path(".nox") / args.runtime / "bin" / "python")
    store = ArtifactStore(Path(args.artifacts))
    records = [
        r
        for r in newest_records(args.results).values()
        if r.kind == "replay"
        and r.runtime.env == args.runtime
        and r.case == args.case
        and r.env == args.env
        and r.precision == "fp32"
        and r.shape_mode == "static"
        and r.verdict.value == "pass"
        and "ort" in r.memory
    ]
    top = max((r.opset for r in records), default=None)
    print(
        "| strategy | params | opset | recorded footprint MB | fresh process MB | recorded working set MB | "
        "fresh process MB | runtime's own start-up MB |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in sorted((r for r in records if r.opset == top), key=lambda r: (r.strategy, r.params_key)):
        manifest = store.read(store.folder(r.env, r.cell_id) / "manifest.json")
        sample = next(s for s in manifest.samples if s.stage == "parity")
        got = fresh(python, store.graph_path(manifest), manifest.input_names, store.arrays(sample.inputs))
        working = r.memory.get("ort.working_set")
        print(
            f"| {r.strategy} | {r.params_key} | {r.opset} | {mb(r.memory['ort'].peak_bytes)} | "
            f"{mb(got['footprint'])} | {mb(working.peak_bytes if working else None)} | {mb(got['working_set'])} | "
            f"{mb(got['baseline'])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
