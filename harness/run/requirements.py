"""Where the cells of a case with requirements (`requires`) run, and what they ran with.

`nox -s matrix` resolves each set of requirements against the environment's pins (harness.host.requirements) and
hands the run a plan: per set, the versions that fit and the venv holding them, or pip's reason that nothing fits
(those cells are not applicable). Run by hand without a plan, a case runs here when this venv already has what it
requires, and is not applicable otherwise, saying so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Optional

from harness.errors import UserError
from harness.plan.registry import Case, requirement_key
from harness.record import installed_packages, requirement_name, satisfied


@dataclass(frozen=True)
class Resolved:
    """One set of requirements in this environment: the versions that fit and the interpreter of the venv that
    holds them (None: this one), or why none fits."""

    requires: str
    packages: Dict[str, str] = field(default_factory=dict)
    python: Optional[str] = None
    reason: Optional[str] = None

    def describe(self) -> str:
        if self.reason:
            return f"requires {self.requires}: not applicable: {self.reason}"
        versions = ", ".join(f"{k} {v}" for k, v in sorted(self.packages.items()))
        return f"requires {self.requires}: {versions}" + (f" in {Path(self.python).parents[1]}" if self.python else "")


def load_plan(path: Optional[str]) -> Dict[str, Resolved]:
    """The host's plan (--requirements-plan FILE): {requirement key: Resolved}; empty without one."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
        return {
            g["requires"]: Resolved(g["requires"], dict(g.get("packages") or {}), g.get("python"), g.get("reason"))
            for g in data["groups"]
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"--requirements-plan {path}: unreadable ({exc}); let `nox -s matrix` write it") from None


def resolve_cases(cases: Iterable[Case], plan: Dict[str, Resolved]) -> Dict[str, Resolved]:
    """{case name: Resolved} for every case that requires something."""
    found = {}
    for case in cases:
        if case.requires:
            key = requirement_key(case.requires)
            found[case.name] = plan.get(key) or (_unplanned(case, key) if plan else _here(case, key))
    return found


def _here(case: Case, key: str) -> Resolved:
    """Without a plan: this venv as it is."""
    versions = installed_packages(case.requires)
    missing = [r for r in case.requires if not satisfied(r, versions[requirement_name(r)])]
    if missing:
        have = ", ".join(f"{n} {v}" for n, v in sorted(versions.items()) if v) or "none of them"
        return Resolved(
            key,
            reason=f"needs {', '.join(missing)}, not installed in this venv (it has {have}); "
            "`nox -s matrix` resolves a case's requires and installs them in a venv of their own",
        )
    return Resolved(key, {n: str(v) for n, v in versions.items()})


def _unplanned(case: Case, key: str) -> Resolved:
    return Resolved(
        key,
        reason=f"nox found no requires={list(case.requires)} in {case.source or 'the case file'}: "
        "write them as a literal list in register_case(...) or as REQUIRES = [...] in the file",
    )
