"""Which mismatches get a divergence, and what each is judged against, read from the results files: the same in the
trusted runtime's environment (which traces) and in the mismatching one's (which locates), so both agree.

A mismatch of a stored fp32 graph is judged against the same graph passing on another runtime of the ladder, the
newest onnxruntime first (then the newest OpenVINO); a converted graph (fp16, int8) against its fp32 graph passing on
the same runtime. A trusted runtime must have an environment of the ladder to trace in. Mismatches without a
trusted judgement get no divergence; the budget keeps the first ones in a stable order (fp32 first).
"""

from __future__ import annotations

import glob
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from harness.campaign.files import kind_of_file
from harness.record import CellRecord, RecordKind, Verdict, job_id, ladder_key, read_results

Label = Tuple[str, str]  # a runtime's (name, version)
JUDGED = (RecordKind.EXPORT.value, RecordKind.REPLAY.value)


@dataclass(frozen=True)
class Mismatch:
    """One mismatching judgement of a stored graph, and the trusted judgement it is located against."""

    record: CellRecord
    trusted: Label
    trusted_env: str  # the runtime environment the trusted runtime lives in (it traces there)
    trusted_precision: str  # fp32: the graph itself, or the fp32 graph a converted one came from
    stages: Tuple[str, ...]  # the judging stages that mismatched: their samples are traced

    @property
    def runtime(self) -> Label:
        return (self.record.runtime.name, str(self.record.runtime.version))

    @property
    def graph(self) -> str:
        return job_id(self.record.env, self.record.cell_id, self.record.precision)

    @property
    def trusted_graph(self) -> str:
        return job_id(self.record.env, self.record.cell_id, self.trusted_precision)


PLAN = ".diverge-plan.json"  # beside the results: the mismatches as the first diverge process found them


def planned(results_dir: str, budget: Optional[int]) -> Tuple[List[Mismatch], int, int]:
    """mismatches() of the judged records under the folder, read once for every diverge process while its judged
    results files stay as they are (each process would otherwise read every results file: seconds each)."""
    key = [[Path(p).name, os.stat(p).st_size, os.stat(p).st_mtime_ns] for p in _judged_files(results_dir)]
    key.append(budget)
    cache = Path(results_dir) / PLAN
    try:
        data = json.loads(cache.read_text())
        if data["key"] == key:
            found = [_from_json(m) for m in data["mismatches"]]
            return found, int(data["untrusted"]), int(data["over_budget"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    found, untrusted, over_budget = mismatches(judged_records(results_dir), budget)
    kept = [_as_json(m) for m in found]
    body = {"key": key, "mismatches": kept, "untrusted": untrusted, "over_budget": over_budget}
    try:
        tmp = cache.with_name(f"{PLAN}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(body))
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only results folder: each process reads them itself
    return found, untrusted, over_budget


def _as_json(m: Mismatch) -> Dict[str, Any]:
    return {
        "record": m.record.to_json(),
        "trusted": list(m.trusted),
        "env": m.trusted_env,
        "precision": m.trusted_precision,
        "stages": list(m.stages),
    }


def _from_json(m: Dict[str, Any]) -> Mismatch:
    trusted = (str(m["trusted"][0]), str(m["trusted"][1]))
    return Mismatch(CellRecord.from_json(m["record"]), trusted, m["env"], m["precision"], tuple(m["stages"]))


def _judged_files(results_dir: str) -> List[str]:
    return [
        path
        for path in sorted(glob.glob(os.path.join(results_dir, "*.jsonl")))
        if kind_of_file(Path(path))[0] in (RecordKind.EXPORT, RecordKind.REPLAY)
    ]


def judged_records(results_dir: str) -> List[CellRecord]:
    """The newest export and replay record of each cell and runtime under the results folder."""
    newest: Dict[Tuple[Any, ...], CellRecord] = {}
    for path in _judged_files(results_dir):  # conversions, traces and divergences judge no graph
        found = read_results(path)
        if found.refusal is not None:
            print(f"skipped: {found.refusal.line()}", file=sys.stderr)
            continue
        for record in found.records:
            if record.kind in JUDGED:
                key = record.key()
                if key not in newest or record.finished_at >= newest[key].finished_at:
                    newest[key] = record
    return list(newest.values())


def _label(record: CellRecord) -> Label:
    return (record.runtime.name, str(record.runtime.version))


def runtime_envs(records: Sequence[CellRecord]) -> Dict[Label, str]:
    """The ladder's runtime environments by the runtime they hold (a replay names its environment)."""
    return {_label(r): str(r.runtime.env) for r in records if r.kind == RecordKind.REPLAY.value and r.runtime.env}


def _trusted(passing: Sequence[Label], envs: Dict[Label, str], exclude: Label) -> Optional[Label]:
    """The newest onnxruntime among the passing runtimes that can trace, else the newest other runtime."""
    usable = [p for p in passing if p != exclude and p in envs]
    if not usable:
        return None
    return max(usable, key=lambda p: (p[0] == "onnxruntime", ladder_key(*p)))


def mismatches(records: Sequence[CellRecord], budget: Optional[int] = None) -> Tuple[List[Mismatch], int, int]:
    """Every mismatch with a trusted judgement, in a stable order (fp32 first), cut to the budget; and how many
    mismatches had none, and how many the budget left out."""
    envs = runtime_envs(records)
    passing: Dict[Tuple[str, str, str], List[Label]] = {}
    for r in records:
        if r.verdict == Verdict.PASS:
            passing.setdefault((r.env, r.cell_id, r.precision), []).append(_label(r))
    found: List[Mismatch] = []
    untrusted = 0
    for r in records:
        if r.verdict != Verdict.MISMATCH or not r.cell_id or r.judged_with:
            continue  # a twin's mismatch is its first's (campaign.chain.share): located once, shown for both
        if r.precision == "fp32":
            trusted = _trusted(passing.get((r.env, r.cell_id, "fp32"), []), envs, _label(r))
        else:
            same = _label(r) in passing.get((r.env, r.cell_id, "fp32"), []) and _label(r) in envs
            trusted = _label(r) if same else None
        if trusted is None:
            untrusted += 1
            continue
        found.append(Mismatch(r, trusted, envs[trusted], "fp32", _failed_stages(r)))
    found.sort(key=lambda m: (m.record.precision != "fp32", m.graph, ladder_key(*m.runtime)))
    kept = found if budget is None else found[:budget]
    return kept, untrusted, len(found) - len(kept)


def _failed_stages(record: CellRecord) -> Tuple[str, ...]:
    failed = record.failed_stage()
    return (failed.name,) if failed is not None and failed.name in ("parity", "dynamic") else ("parity",)
