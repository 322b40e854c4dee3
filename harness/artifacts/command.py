"""`python -m harness convert`: the conversion campaign. Each stored fp32 graph of the selection is converted to
each precision once, in the converter environment, by a converter worker (a converter that crashes costs its
graph); every conversion is recorded (results/convert.jsonl): made, failed with the converter's own message, or
not applicable. The converted graphs are judged by `harness replay` like the fp32 ones.

load -> ConversionKind -> drop_done -> open_results -> decide -> execute -> summarise
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Dict, List, Optional

from harness.artifacts.convert import PRECISIONS, converter_of
from harness.artifacts.jobs import GraphJob, graph_job, job_id, stored_graphs
from harness.artifacts.outcome import conversion_record
from harness.artifacts.store import ArtifactStore, Manifest
from harness.campaign.chain import Kind, conduct, pipeline
from harness.campaign.files import results_path, worker_log
from harness.campaign.flags import artifacts_dir
from harness.campaign.keys import REPLAY_CODE, Key, code_hash, in_shard, parse_shard, resume_key
from harness.campaign.pool import WorkerConfig
from harness.errors import UserError
from harness.record import CellRecord, RecordKind, Verdict, canonical_params
from harness.record.precisions import precision_of


def convert_command(args: argparse.Namespace) -> int:
    return pipeline(args, (ConversionKind.of, conduct))


@dataclass
class ConversionKind(Kind):
    """The stored fp32 graphs of the selection, each to be converted to each precision."""

    store: Optional[ArtifactStore] = None
    sources: Optional[Dict[str, Manifest]] = None  # the fp32 graph of each job, by job id
    noun = "conversion"

    @classmethod
    def of(cls, args: argparse.Namespace) -> ConversionKind:
        store = ArtifactStore(artifacts_dir(args))
        precisions = _precisions(args.precision)
        shard = parse_shard(args.shard)
        jobs: List[GraphJob] = []
        sources: Dict[str, Manifest] = {}
        graphs = _fp32_graphs(store, args)
        searched = {m.digest for m in (graphs if args.search_every_graph else search_targets(graphs))}
        for manifest in graphs:
            if in_shard(manifest.cell_id, shard):
                for precision in precisions:
                    searches = manifest.digest in searched and args.search_budget > 0
                    if precision_of(precision).searched_from and not searches:
                        continue
                    job = graph_job(store, manifest, precision)
                    jobs.append(job)
                    sources[job.cell_id] = manifest
        out = results_path(args, RecordKind.CONVERSION, shard=shard)
        return cls(args, jobs, out, "convert", code_hash(only=REPLAY_CODE), store, sources)

    def key(self, job: GraphJob) -> Key:
        source = self.sources[job.cell_id]
        return resume_key(job.cell_id, (source.digest, self._made_by(job.precision)), code=self.code)

    def _made_by(self, precision: str) -> str:
        """What a conversion's result depends on: its converter, and a search's budget."""
        converter = converter_of(precision)
        return f"{converter}, budget {self.args.search_budget}" if precision_of(precision).searched_from else converter

    def record_key(self, record: CellRecord) -> Optional[Key]:
        """A conversion whose graph the artifacts folder has lost is made again."""
        stored = not record.recipe or bool(record.recipe.get("kept_float"))  # a recipe that passes as is stores none
        lost = stored and not self.store.has(record.env, record.cell_id, record.precision)
        if record.verdict == Verdict.PASS and lost:
            return None
        depends_on = (record.artifact, self._made_by(record.precision))
        return resume_key(
            job_id(record.env, record.cell_id, record.precision), depends_on, record.harness_version, record.code_hash
        )

    def blank(self, job: GraphJob, verdict: Verdict, reason: Optional[str]) -> CellRecord:
        return conversion_record(self.sources[job.cell_id], job.precision, converter_of(job.precision), verdict, reason)

    def worker(self) -> WorkerConfig:
        extra = ("--search-budget", str(self.args.search_budget))
        return WorkerConfig.from_args(
            self.args, self.name, worker_log(self.out), module="harness.artifacts.worker", extra=extra
        )


def _precisions(names: List[str]) -> List[str]:
    unknown = [n for n in names if n not in PRECISIONS]
    if unknown:
        raise UserError(f"--precision {','.join(unknown)}: unknown; the conversions are {', '.join(PRECISIONS)}")
    return names or list(PRECISIONS)


def search_targets(graphs: List[Manifest]) -> List[Manifest]:
    """The graphs a recipe is searched for: one per environment, case, parameters, strategy and exporter, the static
    graph at the highest opset (the one a user ships), so that the searches stay within the default matrix's time."""
    best: Dict[tuple, Manifest] = {}
    for manifest in graphs:
        record = manifest.record
        if record.get("shape_mode") != "static":
            continue
        group = (manifest.env, record.get("case"), canonical_params(record.get("params") or {}), record.get("strategy"))
        group += (record.get("exporter"),)
        if group not in best or record.get("opset", 0) > best[group].record.get("opset", 0):
            best[group] = manifest
    return list(best.values())


def _fp32_graphs(store: ArtifactStore, args: argparse.Namespace) -> List[Manifest]:
    graphs = []
    for manifest in stored_graphs(store):
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
