"""The advisor's view-models: one card per (environment, deployment runtime, opset, device, family, precision),
its ranked candidates with what fails and where their graphs were seen to run, and the overview of every pick."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pandas as pd

from harness.record import Verdict, portability_label
from harness.record.precisions import CONVERTER, precision_of
from harness.report.advisor import Advice, Candidate, Failure, grouped_rows
from harness.report.costs import format_bytes, format_ratio, format_seconds
from harness.report.recipes import RecipeRow, conversion_call
from harness.report.runtimes import Evidence, evidence_of, ladder, made_no_graph
from harness.report.table import FP32
from harness.report.upgrade import side
from harness.report.vocab import VERDICT_STYLE, family_sort_key, precision_sort_key

MAX_FAILURES_SHOWN = 4
REPLAY_TIMING = (
    "timed in a replay, with a smaller latency budget (fewer samples) than the exporting cells: "
    "compare these timings with each other rather than with the exporting environment's"
)
EVIDENCE_SCOPE = ["env", "opset", "device", "family", "strategy", "exporter", "precision"]


@dataclass(frozen=True)
class FailureGroup:
    verdict: str
    label: str
    combos: Tuple[str, ...]


@dataclass(frozen=True)
class CandidateRow:
    rank: int
    strategy: str
    exporter: str
    portability: str
    portability_label: str
    passes: str
    pass_pct: int
    failures: Tuple[FailureGroup, ...]
    harness_errors: int
    latency: str
    latency_abs: str
    memory: str
    memory_abs: str
    is_pick: bool
    evidence: str = ""  # where these graphs were seen to run or be refused, beyond the environment's own runtime


@dataclass(frozen=True)
class AdviceCard:
    id: str
    env: str
    opset: int
    device: str
    family: str
    status: str  # all | partial | none | not_applicable
    pick: Optional[CandidateRow]
    why: str
    latency_ref: str
    memory_ref: str
    rows: Tuple[CandidateRow, ...]
    not_applicable: Tuple[str, ...]  # the distinct reasons given by the cells that could not apply
    needs: Tuple[str, ...] = ()  # what a strategy needs of a model's other operators
    runtime: str = ""  # the deployment runtime's label
    home: bool = True  # the environment's own runtime: its exporting cells judged the graphs
    timing_note: str = ""  # how the timings were taken, when they come from replays
    precision: str = FP32  # the graphs' precision: as exported, or converted
    call: str = ""  # a converted precision: the converter call that makes the pick's graph, as code


@dataclass(frozen=True)
class OverviewRow:
    env: str
    opset: int
    device: str
    cards: Tuple[Optional[AdviceCard], ...]  # one per family, None where the family was not run


@dataclass(frozen=True)
class AdvisorView:
    cards: Tuple[AdviceCard, ...]
    families: Tuple[str, ...]
    envs: Tuple[str, ...]
    opsets: Tuple[int, ...]
    devices: Tuple[str, ...]
    overview: Tuple[OverviewRow, ...]  # the environments' own runtimes
    default: Optional[AdviceCard]
    runtimes: Tuple[str, ...] = ()  # the deployment runtimes other than each environment's own, on the ladder
    homes: Tuple[Tuple[str, str], ...] = ()  # (environment, its own runtime: several joined with " or ")
    precisions: Tuple[str, ...] = (FP32,)  # the precisions advised on: fp32 first, then the converted ones


def _combo_text(failure: Failure, labels: Mapping[Tuple[str, str], str], several: Mapping[str, bool]) -> str:
    text = labels.get((failure.case, failure.params), failure.params)
    if several["case"]:
        text = f"{failure.case}: {text}"
    extra = [getattr(failure, k) for k in ("shape_mode", "dtype") if several[k]]
    return "{} ({})".format(text, ", ".join(extra)) if extra else text


def _verdict_label(verdict: str, home: bool) -> str:
    try:
        return VERDICT_STYLE[Verdict(verdict)].label
    except (ValueError, KeyError):
        # "missing": the candidate has no cell for a combination; in another runtime, its graph was not replayed
        return "not run" if home else "not replayed"


def candidate_row(
    rank: int,
    c: Candidate,
    labels: Mapping[Tuple[str, str], str],
    several: Mapping[str, bool],
    seen: str = "",
    home: bool = True,
) -> CandidateRow:
    groups: Dict[str, List[str]] = {}
    for failure in c.failures:
        groups.setdefault(failure.verdict, []).append(_combo_text(failure, labels, several))
    failures = tuple(FailureGroup(v, _verdict_label(v, home), tuple(combos)) for v, combos in groups.items())
    return CandidateRow(
        rank=rank,
        strategy=c.strategy,
        exporter=c.exporter,
        portability=c.portability,
        portability_label=portability_label(c.portability),
        passes=f"{c.passed}/{c.counted}",
        pass_pct=int(round(100 * c.pass_rate)),
        failures=failures,
        harness_errors=c.harness_errors,
        latency=format_ratio(c.latency),
        latency_abs=format_seconds(c.latency_s),
        memory=format_ratio(c.memory),
        memory_abs=format_bytes(c.memory_bytes),
        is_pick=rank == 1 and c.passed > 0,
        evidence=seen,
    )


def card_id(advice: Advice) -> str:
    base = f"advice-{advice.env}-{advice.opset}-{advice.device}-{advice.family}"
    base = base if advice.home else base + "-" + advice.runtime.replace(" ", "-")
    return base if advice.precision == FP32 else base + "-" + advice.precision


def evidence_by_candidate(judged: pd.DataFrame) -> Dict[Tuple[object, ...], Evidence]:
    """Where each candidate's graphs ran, for every environment, opset, device, family and precision."""
    graphs = ~made_no_graph(judged)
    columns = [judged[c].tolist() for c in EVIDENCE_SCOPE + ["runtime", "verdict"]]
    found: Dict[Tuple[object, ...], List[Tuple[str, str]]] = {}
    for *key, runtime, verdict, graph in zip(*columns, graphs.tolist()):
        tried = found.setdefault(tuple(key), [])
        if graph:
            tried.append((runtime, verdict))
    return {key: evidence_of(tried) for key, tried in found.items()}


def _seen(found: Optional[Evidence], home: Sequence[str]) -> str:
    """The evidence, unless it says no more than that the graphs ran in the environment's own runtime."""
    if found is None or set(found.ran + found.refused + found.failed) <= set(home):
        return ""
    return found.text


def advice_card(
    advice: Advice,
    group: Sequence[Any],
    labels: Mapping[Tuple[str, str], str],
    seen: Mapping[Tuple[object, ...], Evidence],
    home: Sequence[str],
) -> AdviceCard:
    """The card of one piece of advice (`group`: the cells it was given, as advisor.grouped_rows gives them)."""
    several = {k: len({getattr(r, k) for r in group}) > 1 for k in ("case", "shape_mode", "dtype")}
    scope = (advice.env, advice.opset, advice.device, advice.family)
    rows = tuple(
        candidate_row(
            i + 1,
            c,
            labels,
            several,
            _seen(seen.get(scope + (c.strategy, c.exporter, advice.precision)), home),
            advice.home,
        )
        for i, c in enumerate(advice.ranked)
    )
    pick = advice.pick
    state = side(advice).state
    status = state if pick is None else "all" if pick.pass_rate == 1.0 else "partial"
    na = Verdict.NOT_APPLICABLE.value
    reasons = tuple(dict.fromkeys(str(r.reason) for r in group if r.verdict == na and isinstance(r.reason, str)))
    return AdviceCard(
        card_id(advice),
        advice.env,
        advice.opset,
        advice.device,
        advice.family,
        status,
        rows[0] if pick is not None else None,
        advice.why,
        advice.latency_ref,
        advice.memory_ref,
        rows,
        reasons[:MAX_FAILURES_SHOWN],
        advice.needs,
        advice.runtime,
        advice.home,
        "" if advice.home else REPLAY_TIMING,
        advice.precision,
    )


def with_call(card: AdviceCard, recipes: Sequence[RecipeRow]) -> AdviceCard:
    """A card at a converted precision with the converter call that makes its pick's graph: a searched recipe's
    own (the one found for that environment, family and strategy), or the precision's plain call."""
    if card.precision == FP32 or card.pick is None or precision_of(card.precision).made_by != CONVERTER:
        return card
    if precision_of(card.precision).searched_from is None:
        return replace(card, call=conversion_call(card.precision, ()))
    found = [
        r
        for r in recipes
        if (r.env, r.family, r.strategy, r.precision) == (card.env, card.family, card.pick.strategy, card.precision)
        and r.tone != "none"
    ]
    return replace(card, call=found[0].call) if found else card


def _default(cards: Sequence[AdviceCard], envs: Sequence[str]) -> Optional[AdviceCard]:
    """The oldest environment's grid_sample on CPU in its own runtime, preferably where something passes all."""
    home = [c for c in cards if c.home]
    first = envs[0] if envs else None
    preferred = [c for c in home if c.env == first and c.device == "cpu" and c.family == "grid_sample"]
    fallback = preferred[0] if preferred else (home[0] if home else (cards[0] if cards else None))
    return next((c for c in preferred if c.status == "all"), fallback)


def advisor_view(
    advice: Sequence[Advice],
    frame: pd.DataFrame,
    envs: Sequence[str],
    labels: Mapping[Tuple[str, str], str],
    homes: Mapping[str, Tuple[str, ...]],
    groups: Optional[Mapping[Tuple[object, ...], List[Any]]] = None,
    recipes: Sequence[RecipeRow] = (),
) -> AdvisorView:
    """`frame`: every cell as each runtime judged it (harness.report.runtimes.judged); `groups`: its
    advisor.grouped_rows, when the caller has them already; `recipes`: the searches' answers, whose calls a card at
    a searched precision shows."""
    order = {e: i for i, e in enumerate(envs)}
    seen = evidence_by_candidate(frame)
    groups = grouped_rows(frame) if groups is None else groups
    rungs = {label: i for i, label in enumerate(ladder(a.runtime for a in advice))}
    cards = sorted(
        (advice_card(a, groups[a.key], labels, seen, homes.get(a.env, ())) for a in advice),
        # each environment's own runtime first (its cards in the order they had before replays), then the ladder
        key=lambda c: (
            order[c.env],
            0 if c.home else 1 + rungs[c.runtime],
            c.opset,
            c.device,
            family_sort_key(c.family),
            precision_sort_key(c.precision),
        ),
    )
    cards = [with_call(c, recipes) for c in cards]
    home_cards = [c for c in cards if c.home]
    families = tuple(sorted({c.family for c in cards}, key=family_sort_key))
    by_key = {(c.env, c.opset, c.device, c.family): c for c in home_cards}
    row_keys = sorted({(c.env, c.opset, c.device) for c in home_cards}, key=lambda k: (order[k[0]], k[2], k[1]))
    overview = tuple(OverviewRow(e, o, d, tuple(by_key.get((e, o, d, f)) for f in families)) for e, o, d in row_keys)
    return AdvisorView(
        tuple(cards),
        families,
        tuple(envs),
        tuple(sorted({c.opset for c in cards})),
        tuple(sorted({c.device for c in cards})),
        overview,
        _default(cards, envs),
        tuple(ladder(c.runtime for c in cards if not c.home)),
        tuple((e, " or ".join(homes[e])) for e in envs if e in homes),
        tuple(sorted({c.precision for c in cards} | {FP32}, key=precision_sort_key)),
    )
