"""The precisions a graph is judged at, in one place: the graph as exported, the conversions people ship (each named
for its recipe, so two converters of one precision stay two rows), the recipes the search finds, and the precisions a
runtime computes an fp32 graph at when asked. Torch-free: the runner, the replays and the page read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class Precision:
    name: str
    tolerance: str  # the row of harness.judge.parity.PRECISION_TOLERANCES that judges it ("fp32": the cell's own)
    made_by: str  # "export" (as exported), "converter" (a graph converted from the fp32 one), "runtime" (a hint)
    what: str  # what the page and --help say it is
    searched_from: Optional[str] = None  # a searched recipe: the precision whose conversion it starts from
    hint: Optional[str] = None  # a runtime precision: the inference precision asked for (None: the default)
    every_graph: bool = False  # a searched recipe searched for every graph, not one per group (harness convert)


EXPORTED, CONVERTER, RUNTIME = "export", "converter", "runtime"
SEARCH_BUDGET = 12  # conversions a recipe search may make for one graph, its starting one included

PRECISION_LIST: Tuple[Precision, ...] = (
    Precision("fp32", "fp32", EXPORTED, "the graph as exported"),
    Precision("fp16", "fp16", CONVERTER, "onnxruntime's float16 converter, inputs and outputs kept fp32"),
    Precision(
        "fp16-onnxconverter", "fp16", CONVERTER, "onnxconverter-common's float16 converter, inputs and outputs fp32"
    ),
    # fp16's converter takes a fraction of a second, and each search starts from the conversion already made:
    # every graph is searched. An int8 search calibrates each of its conversions: one graph per group.
    Precision(
        "fp16-recipe", "fp16", CONVERTER, "fp16 with the fewest nodes kept float that passes", "fp16", every_graph=True
    ),
    Precision("int8-dynamic", "int8-dynamic", CONVERTER, "onnxruntime's dynamic quantization (weights int8)"),
    Precision("int8-static", "int8-static", CONVERTER, "onnxruntime's static QDQ quantization of every op it can"),
    Precision(
        "int8-static-weighted",
        "int8-static",
        CONVERTER,
        "static QDQ quantization of the weighted ops (Conv, MatMul, Gemm) only",
    ),
    Precision(
        "int8-static-recipe",
        "int8-static",
        CONVERTER,
        "static QDQ of the weighted ops with the fewest nodes kept float that passes",
        "int8-static-weighted",
    ),
    Precision("runtime-default", "runtime", RUNTIME, "the fp32 graph at the runtime's default inference precision"),
    Precision("runtime-bf16", "bf16", RUNTIME, "the fp32 graph computed in bfloat16 by the runtime", hint="bf16"),
    Precision("runtime-f16", "fp16", RUNTIME, "the fp32 graph computed in float16 by the runtime", hint="f16"),
)
PRECISIONS: Dict[str, Precision] = {p.name: p for p in PRECISION_LIST}
PRECISION_NAMES: Tuple[str, ...] = tuple(PRECISIONS)
CONVERSIONS: Tuple[str, ...] = tuple(p.name for p in PRECISION_LIST if p.made_by == CONVERTER)
RUNTIME_DEFAULT = "runtime-default"  # the runtime precision whose hint is the runtime's own choice
RUNTIME_PRECISIONS: Tuple[str, ...] = tuple(p.name for p in PRECISION_LIST if p.made_by == RUNTIME)


def precision_of(name: str) -> Precision:
    """The named precision; an unknown name (a newer file) is judged as its own row, made by a converter."""
    return PRECISIONS.get(name) or Precision(name, name, CONVERTER, name)


def stored_precision(name: str) -> str:
    """The precision of the graph a job judges: a runtime precision judges the fp32 graph."""
    return "fp32" if precision_of(name).made_by == RUNTIME else name
