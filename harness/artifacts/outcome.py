"""One conversion job as its record: the recipe's conversion (harness.artifacts.convert) or its search
(harness.artifacts.search), stored when made, and recorded whatever came of it: made, not applicable with the reason,
the converter's failure with its own message (invalid ONNX included), or a search's best within its budget. Never
raises for the converter's sake."""

from __future__ import annotations

import time
import traceback
from importlib import metadata
from typing import Optional

from harness.artifacts.convert import (
    Converted,
    InvalidGraph,
    NotApplicable,
    converter_of,
    make_conversion,
    store_converted,
)
from harness.artifacts.search import SEARCH_BUDGET, RuntimeRefused, find_recipe
from harness.artifacts.store import ArtifactStore, Manifest
from harness.judge.stages import first_line, message_of
from harness.record import CellRecord, RecordKind, Runtime, Stage, Verdict, torch_free_fingerprint
from harness.record.precisions import precision_of


def convert_job(store: ArtifactStore, manifest: Manifest, precision: str, budget: int = SEARCH_BUDGET) -> CellRecord:
    """A precision's conversion, or its recipe search, as its record."""
    converter = converter_of(precision)
    start = time.monotonic()
    searched = precision_of(precision).searched_from is not None
    store.discard(manifest.env, manifest.cell_id, precision)  # no graph of an earlier conversion outlives this one
    try:
        if searched:
            return _searched(store, manifest, precision, budget, start)
        made = make_conversion(manifest, store, precision)
    except NotApplicable as why:
        return conversion_record(manifest, precision, converter, Verdict.NOT_APPLICABLE, f"{precision}: {why}")
    except InvalidGraph as bad:  # onnx.checker refused what the converter wrote
        stage = Stage("check", "failed", "InvalidGraph", str(bad), round(time.monotonic() - start, 4))
        return conversion_record(manifest, precision, converter, Verdict.CHECK_FAILED, f"check: {bad}", stage)
    except Exception as exc:  # the converter's own failure, with its message
        text = message_of(exc) + "\n" + traceback.format_exc()[-1500:]
        stage = Stage("convert", "failed", type(exc).__name__, text, round(time.monotonic() - start, 4))
        reason = f"convert: {type(exc).__name__}: {first_line(exc)}"
        return conversion_record(manifest, precision, converter, Verdict.EXPORT_FAILED, reason, stage)
    store_converted(manifest, store, precision, made, None)
    stage = Stage("convert", "ok", seconds=round(time.monotonic() - start, 4))
    return conversion_record(manifest, precision, made.converter, Verdict.PASS, None, stage)


def _searched(store: ArtifactStore, manifest: Manifest, precision: str, budget: int, start: float) -> CellRecord:
    try:
        found = find_recipe(manifest, store, precision, budget)
    except RuntimeRefused as why:
        version = metadata.version("onnxruntime")
        reason = f"search: onnxruntime {version} refuses the valid starting graph at load (its own failure): {why}"
        record = conversion_record(manifest, precision, converter_of(precision), Verdict.NOT_APPLICABLE, reason)
        return record.with_(kind=RecordKind.SEARCH.value)
    recipe = found.recipe
    stage = Stage("search", "ok" if found.passed else "failed", seconds=round(time.monotonic() - start, 4))
    if found.graph is not None:
        store_converted(manifest, store, precision, Converted(found.graph, found.converter), recipe)
    verdict, reason = Verdict.PASS, None
    if not found.passed and recipe.get("candidates", 2) < 2:
        verdict = Verdict.MISMATCH
        reason = (
            f"search: {recipe['from']} converts {recipe.get('candidates')} node here and misses (needs atol "
            f"{_number(recipe['min_passing_atol'])}, atol {_number(recipe['atol'])}); keeping it float would leave "
            "nothing converted"
        )
    elif not found.passed:
        verdict = Verdict.MISMATCH
        reason = (
            f"search: no recipe within {recipe['conversions']} conversions; the best kept "
            f"{len(recipe['kept_float'])} of {recipe['nodes']} nodes float and needs atol "
            f"{_number(recipe['min_passing_atol'])} (atol {_number(recipe['atol'])})"
        )
    record = conversion_record(manifest, precision, found.converter, verdict, reason, stage)
    return record.with_(kind=RecordKind.SEARCH.value, recipe=recipe)


def _number(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.3g}"


def conversion_record(
    manifest: Manifest,
    precision: str,
    converter: str,
    verdict: Verdict,
    reason: Optional[str],
    stage: Optional[Stage] = None,
) -> CellRecord:
    """The exporting cell's record as the converter left it: its kind `conversion`, the converter, the fp32 graph it
    converted (`artifact`), the converter environment's fingerprint. No runtime judged it: the replays do."""
    exported = CellRecord.from_json(manifest.record)
    kind = RecordKind.SEARCH if precision_of(precision).searched_from else RecordKind.CONVERSION
    return exported.with_(
        kind=kind.value,
        precision=precision,
        runtime=Runtime("onnxruntime", metadata.version("onnxruntime"), env="convert"),
        runtime_fingerprint=torch_free_fingerprint(),
        converter=converter,
        artifact=manifest.digest,
        verdict=verdict,
        reason=reason,
        stages=(stage,) if stage else (),
        parity=None,
        eager_parity=None,
        latency={},
        memory={},
        traceback=None,
    )
