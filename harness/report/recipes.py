"""The recipes the search found (records of kind `search`): per graph, the nodes kept float, how many of the graph's
nodes stayed float, the conversions it took of its budget, what it costs against fp32, and the converter call that
reproduces it, as code; or, where none passed within the budget, the best it reached. Built before the templates,
which only lay it out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from harness.record import CellRecord, RecordKind, Verdict
from harness.record.precisions import precision_of
from harness.report.costs import format_ratio
from harness.report.vocab import family_sort_key, precision_sort_key

SHOWN_NODES = 6  # node names listed in a row; the call holds them all


@dataclass(frozen=True)
class RecipeRow:
    env: str
    family: str
    case: str
    params: str
    strategy: str
    exporter: str
    opset: int
    precision: str
    starts_from: str
    outcome: str  # "passes as converted", "passes with N nodes float", "none within N conversions"
    tone: str  # all | some | none
    kept: str  # "Gemm /fc/Gemm, MatMul /MatMul", shortened
    float_nodes: str  # "3 of 67"
    conversions: str  # "5 of 12"
    psnr: str
    latency: str  # against fp32 on the converter's onnxruntime
    size: str
    call: str  # the converter call that reproduces it


def _number(value: Any, fmt: str) -> str:
    return "—" if not isinstance(value, (int, float)) or isinstance(value, bool) else format(value, fmt)


# A recipe's converter options (harness.artifacts.search.CONVERTER_REPAIRS) as the converter's own call names them.
OPTION_CALLS = {"symbolic": "use_symbolic_shape_infer"}


def conversion_call(precision: str, kept: Sequence[str], options: Optional[Dict[str, Any]] = None) -> str:
    """The converter call that makes a precision's graph (with `kept` nodes left float and the recipe's converter
    `options`), as a user would write it: the calls harness.artifacts.convert makes."""
    names = "[" + ", ".join(repr(n) for n in kept) + "]"
    start = precision_of(precision).searched_from or precision
    if start == "fp16":
        extra = "".join(f", {OPTION_CALLS.get(k, k)}={v!r}" for k, v in (options or {}).items())
        extra += f", node_block_list={names}" if kept else ""
        return (
            "import onnx\n"
            "from onnxruntime.transformers.onnx_model import OnnxModel\n"
            "model = OnnxModel(onnx.load('model.onnx'))\n"
            f"model.convert_float_to_float16(keep_io_types=True{extra})\n"
            "model.save_model_to_file('model.fp16.onnx')"
        )
    if start == "fp16-onnxconverter":
        return (
            "import onnx\n"
            "from onnxconverter_common import float16\n"
            "model = float16.convert_float_to_float16(onnx.load('model.onnx'), keep_io_types=True)\n"
            "onnx.save(model, 'model.fp16.onnx')"
        )
    if start == "int8-dynamic":
        return (
            "from onnxruntime.quantization import QuantType, quantize_dynamic\n"
            "quantize_dynamic('model.onnx', 'model.int8.onnx', weight_type=QuantType.QInt8)"
        )
    ops = (
        "\n                op_types_to_quantize=['Conv', 'MatMul', 'Gemm']," if start == "int8-static-weighted" else ""
    )
    exclude = f", nodes_to_exclude={names}" if kept else ""
    return (
        "from onnxruntime.quantization import QuantFormat, QuantType, quant_pre_process, quantize_static\n"
        "quant_pre_process('model.onnx', 'model.pre.onnx', skip_symbolic_shape=True)\n"
        "quantize_static('model.pre.onnx', 'model.int8.onnx', calibration_reader, quant_format=QuantFormat.QDQ,"
        f"{ops}\n                activation_type=QuantType.QInt8, weight_type=QuantType.QInt8{exclude})"
    )


def recipe_row(record: CellRecord) -> Optional[RecipeRow]:
    recipe: Dict[str, Any] = record.recipe or {}
    if not recipe:
        return None
    kept = [(str(k[0]), str(k[1])) for k in recipe.get("kept_float") or () if len(k) == 2]
    found = record.verdict == Verdict.PASS
    budget = recipe.get("budget")
    options = {str(k): v for k, v in (recipe.get("options") or {}).items()}
    if found and not kept and not options:
        outcome, tone = f"{recipe.get('from')} passes as converted", "all"
    elif found:
        changed = ", ".join(f"{OPTION_CALLS.get(k, k)}={v!r}" for k, v in options.items())
        nodes = f"{len(kept)} node{'s' if len(kept) != 1 else ''} kept float" if kept or not changed else ""
        outcome, tone = "passes with " + " and ".join(p for p in (changed, nodes) if p), "some"
    else:
        outcome, tone = f"none within {_number(recipe.get('conversions'), 'd')} conversions; the best shown", "none"
    shown = ", ".join(f"{op} {name}" for name, op in kept[:SHOWN_NODES]) + (" …" if len(kept) > SHOWN_NODES else "")
    return RecipeRow(
        record.env,
        record.family,
        record.case,
        record.params_key,
        record.strategy,
        record.exporter,
        record.opset,
        record.precision,
        str(recipe.get("from") or ""),
        outcome,
        tone,
        shown or "—",
        f"{_number(recipe.get('float_nodes'), 'd')} of {_number(recipe.get('nodes'), 'd')}",
        f"{_number(recipe.get('conversions'), 'd')} of {_number(budget, 'd')}",
        "—" if recipe.get("psnr") is None else f"{_number(recipe.get('psnr'), '.1f')} dB",
        format_ratio(recipe.get("latency_vs_fp32")) if found and (kept or options) else "—",
        format_ratio(recipe.get("bytes_vs_fp32")) if found and (kept or options) else "—",
        conversion_call(record.precision, [name for name, _ in kept], options),
    )


def recipe_rows(records: Sequence[CellRecord]) -> Tuple[RecipeRow, ...]:
    rows: List[RecipeRow] = []
    for record in records:
        if record.kind == RecordKind.SEARCH.value:
            row = recipe_row(record)
            if row is not None:
                rows.append(row)
    rows.sort(
        key=lambda r: (family_sort_key(r.family), r.case, r.params, precision_sort_key(r.precision), r.env, r.strategy)
    )
    return tuple(rows)
