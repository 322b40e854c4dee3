"""What the details panel shows for one cell, in the page's compact form: short arrays, with repeated messages,
fingerprints and runtimes stored once and referred to by position."""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence, Tuple

from harness.record import CellRecord, Fingerprint, Runtime, Stage
from harness.report.vocab import FINGERPRINT_COLUMNS, runtime_label

# The parity the details panel shows, in the order of its array ("p").
PARITY_KEYS = (
    "max_abs",
    "max_rel",
    "atol",
    "rtol",
    "min_passing_atol",
    "shapes_checked",
    "mean_abs",
    "psnr",
    "p99_abs",
)
MAX_MESSAGE = 8000  # characters of one error message kept on the page; results.json keeps them whole


class Interned:
    """A list of distinct values, each referred to by its position."""

    def __init__(self) -> None:
        self.values: List[Any] = []
        self._index: Dict[str, int] = {}
        self._made: Dict[Hashable, int] = {}

    def add(self, value: Any) -> int:
        key = json.dumps(value, sort_keys=True, default=str)
        if key not in self._index:
            self._index[key] = len(self.values)
            self.values.append(value)
        return self._index[key]

    def add_made(self, source: Hashable, make: Callable[[Any], Any]) -> int:
        """add(make(source)), making it once per distinct source: thousands of cells share a few fingerprints."""
        if source not in self._made:
            self._made[source] = self.add(make(source))
        return self._made[source]


def message(text: Any) -> Optional[str]:
    if text is None:
        return None
    text = str(text)
    return (
        text
        if len(text) <= MAX_MESSAGE
        else text[:MAX_MESSAGE] + f" … ({len(text) - MAX_MESSAGE} more characters in results.json)"
    )


def number(value: Any) -> Any:
    # The page's script does arithmetic on these: anything else a file holds there is shown as unknown.
    if isinstance(value, float) and math.isfinite(value):
        # Five significant digits: the panel shows four at most; results.json keeps every digit.
        return float(f"{value:.5g}")
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def fingerprint_shown(fingerprint: Fingerprint) -> Dict[str, Any]:
    """The fingerprint as the details panel lists it: the contract's keys, then whatever else was recorded."""
    data = fingerprint.to_json()
    data["ort_providers"] = ", ".join(data["ort_providers"]) or None
    data["packages"] = ", ".join(f"{k} {v}" for k, v in sorted(data["packages"].items())) or None  # a case's own
    shown = {k: data[k] for k in FINGERPRINT_COLUMNS}
    shown.update((k, v) for k, v in data.items() if k not in shown and v is not None)
    return shown


def runtime_shown(judged_by: Tuple[Runtime, str, str, str]) -> Dict[str, Any]:
    """The runtime that judged the graph, and the precision it judged, as the details panel lists them; the record's
    kind (export, replay, conversion) says whose runtime it was."""
    runtime, precision, converter, kind = judged_by
    return {
        "record": kind,
        "runtime": runtime_label(runtime.name, runtime.version),
        "runtime environment": runtime.env,
        "python": runtime.python,
        "platform": runtime.platform,
        "providers": ", ".join(runtime.providers) or None,
        "precision": precision,
        "converter": converter or None,
    }


def _export(record: CellRecord) -> Optional[Dict[str, Any]]:
    if record.export is None:
        return None
    ops = sorted(([str(k), number(v)] for k, v in record.export.op_types.items()), key=lambda kv: -(kv[1] or 0))
    return {
        "nodes": number(record.export.nodes),
        "bytes": number(record.export.bytes),
        "domains": [str(d) for d in record.export.domains],
        "ops": ops[:12],
    }


def _stage(stage: Stage, strings: Interned) -> List[Any]:
    """[name, outcome, seconds, error type, message], without the trailing nulls; a stage skipped without a word is
    only [name, "skipped"]. Seconds to the millisecond, as the panel shows them."""
    if stage.outcome == "skipped" and stage.message is None and stage.error_type is None:
        return [stage.name, stage.outcome]
    said = None if stage.message is None else strings.add_made(stage.message, message)
    seconds = number(stage.seconds)
    shown = [stage.name, stage.outcome, None if seconds is None else round(seconds, 3), stage.error_type, said]
    while shown[-1] is None:
        shown.pop()
    return shown


def _said(strings: Interned, text: Any) -> Optional[int]:
    """Where a short text many cells share sits in `strings`; None for none."""
    return None if text is None else strings.add_made(str(text), str)


def detail(
    record: CellRecord, strings: Interned, fingerprints: Interned, runtimes: Interned, export: bool = True
) -> Dict[str, Any]:
    """Everything the details panel shows for one cell (`export`: False for a replay whose exporting cell shows it)."""
    stages = [_stage(s, strings) for s in record.stages]
    latency = {
        t: [number(m.median_s), number(m.iqr_s), number(m.samples), number(m.threads), bool(m.noisy)]
        for t, m in record.latency.items()
    }
    parity = record.parity
    shown = {
        "st": stages,
        "ao": number(record.actual_opset),
        "r": None if record.reason is None else strings.add_made(record.reason, message),
        "p": [number(getattr(parity, k)) for k in PARITY_KEYS] if parity else None,
        "l": latency,
        "m": {t: [number(m.peak_bytes), _said(strings, m.method)] for t, m in record.memory.items()},
        "x": _export(record) if export else None,
        "f": fingerprints.add_made(record.fingerprint, fingerprint_shown),
        "rt": runtimes.add_made((record.runtime, record.precision, record.converter, record.kind), runtime_shown),
        "a": record.artifact or None,
        "t": [record.started_at, record.finished_at, number(record.wall_s)],
        # the run and the harness version are shared by many cells: stored once, like messages
        "id": [_said(strings, record.run_id), record.cell_id, _said(strings, record.harness_version)],
        "tags": list(record.tags),
    }
    if record.judged_with:  # a twin's: the job whose answer it is (campaign.chain.share)
        shown["jw"] = strings.add_made(record.judged_with, str)
    return shown


# What a replay shares with its exporting cell: left to the exporting cell's details, which the page reads instead.
SHARED_WITH_ORIGIN = ("ao", "x", "f", "tags")


def link_replays(details: List[Dict[str, Any]], origin: Sequence[Optional[int]]) -> None:
    """Each replay names its exporting cell ("of") and drops what it shares with it; each exporting cell lists
    its replays ("rp")."""
    for index, exporting in enumerate(origin):
        if exporting is None or exporting == index:
            continue
        replay, origin = details[index], details[exporting]
        replay["of"] = exporting
        for key in SHARED_WITH_ORIGIN:
            replay.pop(key, None)
        if replay.get("a") == origin.get("a"):
            replay.pop("a", None)  # the same stored graph
        if replay["id"][1] == origin["id"][1]:
            replay["id"][1] = None  # the same cell
        origin.setdefault("rp", []).append(index)
