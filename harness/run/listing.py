"""`python -m harness list`: the cases, the strategies, the cells a selection names, and what this environment
cannot do at all."""

from __future__ import annotations

import argparse
import sys

from harness.errors import ExitCode
from harness.record import portability_label
from harness.run.steps import Run, discover, load, within_limits


def list_command(args: argparse.Namespace) -> int:
    run = Run(args)
    for step in (load, discover):
        step(run)
    if args.cells:
        return _list_cells(run)
    _list_cases(run)
    _list_strategies(run)
    _list_limits(run)
    return ExitCode.OK


def _list_cells(run: Run) -> int:
    within_limits(run)
    for cell in run.cells:
        print(cell.label())
    beyond = sum(run.beyond.values())
    print(f"{len(run.cells)} cells in {run.env.name} ({beyond} beyond this environment)", file=sys.stderr)
    _list_limits(run, stream=sys.stderr)
    return ExitCode.OK


def _list_cases(run: Run) -> None:
    for case in run.cases.values():
        if run.selection.cases and case.name not in run.selection.cases:
            continue
        print(
            f"{case.family}/{case.name}: {case.description} [{len(case.params)} params; "
            f"exporters {','.join(case.exporters)}; shapes {','.join(case.shape_modes)}; tags {','.join(case.tags)}]"
        )
    print()


def _list_strategies(run: Run) -> None:
    from harness.strategies import strategies_for

    for family in sorted({case.family for case in run.cases.values()}):
        for s in strategies_for(family):
            print(f"{s.family}/{s.name}: {s.summary} ({portability_label(s.portability.value)})")


def _list_limits(run: Run, stream=None) -> None:
    out = stream or sys.stdout
    print(f"\n{run.env.name} cannot do (these never become cells):", file=out)
    for key, reason in run.limits.describe().items():
        print(f"  {key}: {reason}", file=out)
