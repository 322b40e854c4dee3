"""`python -m harness convert`: the conversion campaign. Each stored fp32 graph of the selection is converted to
each precision once, in the converter environment, by a converter worker (a converter that crashes costs its
graph); every conversion is recorded (results/convert.jsonl): made, failed with the converter's own message, or
not applicable. Then the recipe searches, which start from those conversions: one graph per environment, case,
parameters, strategy and exporter, the static graph at the highest opset whose starting conversion was made. The
converted graphs are judged by `harness replay` like the fp32 ones.

ConversionKind (the conversions) -> conduct, then ConversionKind (the searches) -> conduct; each conduct is
drop_done -> open_results -> decide -> share -> execute -> summarise
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from harness.artifacts.convert import PRECISIONS, converter_of, store_like
from harness.artifacts.jobs import GraphJob, graph_job, judgement_key, stored_graphs
from harness.artifacts.outcome import conversion_record
from harness.artifacts.store import ArtifactStore, Manifest
from harness.campaign.chain import Kind, conduct, pipeline
from harness.campaign.files import results_path, worker_log
from harness.campaign.flags import artifacts_dir
from harness.campaign.keys import REPLAY_CODE, Key, code_hash, in_shard, parse_shard, resume_key
from harness.campaign.pool import WorkerConfig
from harness.errors import ExitCode, UserError
from harness.record import CellRecord, RecordKind, Verdict, canonical_params, job_id
from harness.record.precisions import precision_of


def convert_command(args: argparse.Namespace) -> int:
    precisions = _precisions(args.precision)
    plain = [p for p in precisions if not precision_of(p).searched_from]
    searched = [p for p in precisions if precision_of(p).searched_from and args.search_budget > 0]
    codes = [pipeline(args, (lambda a: ConversionKind.of(a, plain), conduct))] if plain else []
    if searched:
        codes.append(pipeline(args, (lambda a: ConversionKind.of(a, searched), conduct)))
    return max(codes, default=ExitCode.OK)


@dataclass
class ConversionKind(Kind):
    """The stored fp32 graphs of the selection, each to be converted to each precision."""

    store: Optional[ArtifactStore] = None
    sources: Optional[Dict[str, Manifest]] = None  # the fp32 graph of each job, by job id
    noun = "conversion"

    @classmethod
    def of(cls, args: argparse.Namespace, precisions: List[str]) -> ConversionKind:
        """The conversions to `precisions`, or the searches of searched ones (after the conversions they start
        from: their targets are chosen by what the store holds)."""
        store = ArtifactStore(artifacts_dir(args))
        shard = parse_shard(args.shard)
        jobs: List[GraphJob] = []
        sources: Dict[str, Manifest] = {}
        graphs = _fp32_graphs(store, args)
        for precision in precisions:
            start = precision_of(precision).searched_from
            every = args.search_every_graph or precision_of(precision).every_graph
            chosen = search_targets(graphs, store, start) if start and not every else graphs
            for manifest in chosen:
                if in_shard(manifest.cell_id, shard):
                    job = graph_job(store, manifest, precision)
                    jobs.append(job)
                    sources[job.cell_id] = manifest
        out = results_path(args, RecordKind.CONVERSION, shard=shard)
        made = cls(args, jobs, out, "convert", code_hash(only=REPLAY_CODE), store, sources)
        if any(precision_of(p).searched_from for p in precisions):
            made.noun = "recipe search"  # "234 recipe searches"
        return made

    def key(self, job: GraphJob) -> Key:
        source = self.sources[job.cell_id]
        return resume_key(job.cell_id, (source.digest, self._made_by(job.precision)), code=self.code)

    def _made_by(self, precision: str) -> str:
        """What a conversion's result depends on: its converter, and a search's budget."""
        converter = converter_of(precision)
        return f"{converter}, budget {self.args.search_budget}" if precision_of(precision).searched_from else converter

    def record_key(self, record: CellRecord) -> Optional[Key]:
        """A conversion whose graph the artifacts folder has lost is made again."""
        recipe = record.recipe or {}
        stored = not recipe or bool(recipe.get("kept_float") or recipe.get("options"))  # one that passes as is: none
        lost = stored and not self.store.has(record.env, record.cell_id, record.precision)
        if record.verdict == Verdict.PASS and lost:
            return None
        depends_on = (record.artifact, self._made_by(record.precision))
        return resume_key(
            job_id(record.env, record.cell_id, record.precision), depends_on, record.harness_version, record.code_hash
        )

    def twin_key(self, job: GraphJob) -> Optional[str]:
        return judgement_key(self.store, self.sources[job.cell_id], job.precision)

    def as_twin(self, job: GraphJob, answer: CellRecord, first: GraphJob) -> CellRecord:
        """The twin's record, and the graph `first`'s conversion stored, stored beside the twin's fp32 graph too."""
        source, first_source = self.sources[job.cell_id], self.sources[first.cell_id]
        if self.store.has(first_source.env, first_source.cell_id, job.precision):
            store_like(source, self.store, job.precision, first_source)
        return super().as_twin(job, answer, first)

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


def search_targets(graphs: List[Manifest], store: ArtifactStore, start: str) -> List[Manifest]:
    """The graphs a recipe is searched for, so that the searches stay within the default matrix's time: one per
    environment, case, parameters, strategy and exporter, the static graph at the highest opset whose `start`
    conversion was made (else at the highest opset: the search may repair what the converter wrote)."""
    best: Dict[tuple, Tuple[tuple, Manifest]] = {}
    for manifest in graphs:
        record = manifest.record
        if record.get("shape_mode") != "static":
            continue
        group = (manifest.env, record.get("case"), canonical_params(record.get("params") or {}), record.get("strategy"))
        group += (record.get("exporter"),)
        rank = (store.has(manifest.env, manifest.cell_id, start), record.get("opset", 0))
        if group not in best or rank > best[group][0]:
            best[group] = (rank, manifest)
    return [manifest for _, manifest in best.values()]


def _fp32_graphs(store: ArtifactStore, args: argparse.Namespace) -> List[Manifest]:
    graphs = []
    for manifest in stored_graphs(store):
        record = manifest.record
        if manifest.precision != "fp32" or (args.tag and not set(args.tag) & set(manifest.tags)):
            continue
        if (not args.case or record.get("case") in args.case) and (not args.from_env or manifest.env in args.from_env):
            graphs.append(manifest)
    if not graphs:
        raise UserError(
            f"no stored fp32 graph under {store.root} matches the selection (tags {', '.join(args.tag) or 'any'}); "
            "`nox -s matrix` keeps them, or pass --artifacts DIR"
        )
    return graphs
