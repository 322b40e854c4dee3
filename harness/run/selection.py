"""The cases and the selection a command names, checked against what exists: a typo is one line naming the fix."""

from __future__ import annotations

import argparse
from typing import Dict, Tuple

from harness.errors import UserError
from harness.plan.registry import EXPORTERS, SHAPE_MODES, Case, get_case, load_cases
from harness.plan.spec import Selection

KNOWN = {
    "exporter": EXPORTERS,
    "shape_mode": SHAPE_MODES,
    "device": ("cpu", "cuda"),
    "dtype": ("float32", "float16", "bfloat16", "float64"),
}


def selection_from(args: argparse.Namespace) -> Selection:
    for key, allowed in KNOWN.items():
        for value in getattr(args, key):
            if value not in allowed:
                flag = "--" + key.replace("_", "-")
                raise UserError(f"{flag} {value}: unknown; use one of {', '.join(allowed)}")
    return Selection(
        cases=tuple(args.case),
        families=tuple(args.family),
        strategies=tuple(args.strategy),
        opsets=tuple(args.opset),
        exporters=tuple(args.exporter),
        shape_modes=tuple(args.shape_mode),
        devices=tuple(args.device),
        dtypes=tuple(args.dtype),
        tags=tuple(args.tag),
    )


def load_selection(args: argparse.Namespace) -> Tuple[Dict[str, Case], Selection]:
    """Import the case files, then check every name the flags give."""
    from harness.strategies import families, strategies_for

    cases = {c.name: c for c in load_cases(args.cases_dir)}
    selection = selection_from(args)
    for name in selection.cases:
        get_case(name)
    known_families = families()
    for family in selection.families:
        if family not in known_families:
            raise UserError(f"--family {family}: unknown; known families: {', '.join(known_families)}")
    known = sorted({s.name for f in known_families for s in strategies_for(f)})
    for name in selection.strategies:
        if name not in known:
            raise UserError(f"--strategy {name}: unknown; known: {', '.join(known)}")
    return cases, selection
