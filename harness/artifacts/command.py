"""`python -m harness convert`: each stored fp32 graph of the selection converted to each precision once, in the
converter environment; a conversion that fails, or means nothing for its graph, is recorded (results/convert.jsonl)
with the converter's own message. The converted graphs are judged by `harness replay` like the fp32 ones."""

from __future__ import annotations

import argparse
import sys
import traceback
from importlib import metadata
from pathlib import Path
from typing import List, Optional, Set, Tuple

from harness import __version__
from harness.artifacts.convert import PRECISIONS, NotApplicable, convert
from harness.artifacts.store import ArtifactError, ArtifactStore, Manifest
from harness.cli import artifacts_dir
from harness.errors import ExitCode, UserError
from harness.judge.stages import first_line, message_of
from harness.record import CellRecord, Runtime, Stage, Verdict, read_results
from harness.run.pool import new_run_id, now_iso
from harness.run.writer import REPLAY_CODE, ResultsWriter, code_hash


def convert_command(args: argparse.Namespace) -> int:
    store = ArtifactStore(artifacts_dir(args))
    precisions = _precisions(args.precision)
    graphs = _fp32_graphs(store, args)
    out = Path(args.out) if args.out else Path(args.results_dir) / "convert.jsonl"
    recorded = _recorded(out)
    writer = ResultsWriter(out)
    stamp = dict(run_id=new_run_id(), code_hash=code_hash(only=REPLAY_CODE), harness_version=__version__)
    counts = {"converted": 0, "kept": 0, "not_applicable": 0, "failed": 0}
    try:
        for manifest in graphs:
            for precision in precisions:
                outcome = _one(store, manifest, precision, recorded, args.rerun)
                if isinstance(outcome, CellRecord):
                    writer.write(outcome.with_(**stamp, finished_at=now_iso()))
                    outcome = "not_applicable" if outcome.verdict == Verdict.NOT_APPLICABLE else "failed"
                counts[outcome] += 1
    except KeyboardInterrupt:
        print("interrupted: every conversion made is kept; run the same command again to resume", file=sys.stderr)
        return ExitCode.INTERRUPTED
    finally:
        writer.close()
    print(
        f"convert: {len(graphs)} fp32 graphs x {', '.join(precisions)}: {counts['converted']} converted, "
        f"{counts['kept']} kept from earlier, {counts['not_applicable']} not applicable, {counts['failed']} failed "
        f"(recorded in {out})",
        file=sys.stderr,
    )
    return ExitCode.OK


def _one(store: ArtifactStore, manifest: Manifest, precision: str, recorded: Set[Tuple[str, ...]], rerun: bool):
    """ "converted", "kept", or the record of a conversion that failed or does not apply."""
    converter = _converter_versions()
    if not rerun and store.has(manifest.env, manifest.cell_id, precision):
        done = store.read(store.folder(manifest.env, manifest.cell_id, precision) / "manifest.json")
        if done.source == manifest.digest and done.converter in converter:
            return "kept"
    if not rerun and (manifest.env, manifest.cell_id, precision, manifest.digest) in recorded:
        return "kept"
    try:
        convert(manifest, store, precision)
        return "converted"
    except NotApplicable as why:
        return _record(manifest, precision, Verdict.NOT_APPLICABLE, f"{precision}: {why}", None)
    except Exception as exc:  # the converter's own failure, with its message
        stage = Stage("convert", "failed", type(exc).__name__, message_of(exc) + "\n" + traceback.format_exc()[-1500:])
        return _record(
            manifest, precision, Verdict.EXPORT_FAILED, f"convert: {type(exc).__name__}: {first_line(exc)}", stage
        )


def _record(manifest: Manifest, precision: str, verdict: Verdict, reason: str, stage: Optional[Stage]) -> CellRecord:
    exported = CellRecord.from_json(manifest.record)
    ort = metadata.version("onnxruntime")
    return exported.with_(
        precision=precision,
        runtime=Runtime("onnxruntime", ort, env="convert"),
        converter=_converter_versions()[0 if precision == "fp16" else 1],
        artifact=manifest.digest,
        verdict=verdict,
        reason=reason,
        stages=(stage,) if stage else (),
        parity=None,
        eager_parity=None,
        latency={},
        memory={},
        started_at=now_iso(),
    )


def _converter_versions() -> Tuple[str, str]:
    return (
        f"onnxconverter-common {metadata.version('onnxconverter-common')}",
        f"onnxruntime {metadata.version('onnxruntime')} quantization",
    )


def _precisions(names: List[str]) -> List[str]:
    unknown = [n for n in names if n not in PRECISIONS]
    if unknown:
        raise UserError(f"--precision {','.join(unknown)}: unknown; the conversions are {', '.join(PRECISIONS)}")
    return names or list(PRECISIONS)


def _fp32_graphs(store: ArtifactStore, args: argparse.Namespace) -> List[Manifest]:
    graphs = []
    for path in store.manifests():
        try:
            manifest = store.read(path)
        except ArtifactError as exc:
            print(f"skipped: {exc}", file=sys.stderr)
            continue
        record = manifest.record
        if manifest.precision != "fp32" or (args.tag and not set(args.tag) & set(record.get("tags") or ())):
            continue
        if (not args.case or record.get("case") in args.case) and (not args.from_env or manifest.env in args.from_env):
            graphs.append(manifest)
    if not graphs:
        raise UserError(
            f"no stored fp32 graph under {store.root} matches the selection (tags {', '.join(args.tag) or 'any'}); "
            "`nox -s matrix` keeps them, or pass --artifacts DIR"
        )
    return graphs


def _recorded(path: Path) -> Set[Tuple[str, ...]]:
    if not path.exists():
        return set()
    found = read_results(path)
    return {(r.env, r.cell_id, r.precision, r.artifact) for r in found.records if r.verdict != Verdict.HARNESS_ERROR}
