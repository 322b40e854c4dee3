"""A case's own requirements (`requires`), resolved per environment against its pins and installed in a venv of
their own; the environment's pins never change.

Host side (the noxfile): the case files are read, not imported (they import torch); each set of requirements is
resolved by the environment's own pip (`pip install --dry-run --report`, the pins as constraints: the newest
versions that fit its torch and Python), and installed into a copy of the environment's venv cached by the pins
and the resolved versions. The run is handed a plan (harness.run.requirements) saying, per set, the versions and
the venv, or pip's reason in one line that nothing fits.

pip runs with PIP_CONFIG_FILE set to the null device: a machine's own pip configuration (a constraint file capping
torch, say) is not the index and must not decide what fits; an index or find-links given by environment variables
(PIP_INDEX_URL, PIP_FIND_LINKS) still applies, as it would for the user.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

from harness.errors import UserError
from harness.host.provision import Provisioner, venv_python
from harness.plan.registry import BUILTIN_CASES_DIR, requirement_key
from harness.record import requirement_name


@dataclass(frozen=True)
class Resolution:
    """One set of requirements in one environment: the versions that fit, or pip's reason that none does."""

    requires: Tuple[str, ...]
    packages: Dict[str, str] = field(default_factory=dict)
    install: Tuple[str, ...] = ()  # what the venv lacks: name==version of each distribution pip would add
    reason: Optional[str] = None

    @property
    def key(self) -> str:
        return requirement_key(self.requires)


# Reading the case files ---------------------------------------------------------------------------------


def declared_requirements(cases_dirs: Sequence[str] = ()) -> List[Tuple[str, ...]]:
    """Every distinct set of requirements the case files declare (built-in cases/ and each --cases-dir)."""
    found: Dict[str, Tuple[str, ...]] = {}
    folders = [BUILTIN_CASES_DIR, *map(Path, cases_dirs)]
    for folder in folders:
        for file in sorted(Path(folder).glob("*.py")) if Path(folder).is_dir() else ():
            if not file.name.startswith("_"):
                for requires in file_requirements(file):
                    found.setdefault(requirement_key(requires), requires)
    return [found[k] for k in sorted(found)]


def file_requirements(file: Path) -> Set[Tuple[str, ...]]:
    """The requires of each register_case(...) call in a file, or its module-level REQUIRES, read as literals."""
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise UserError(f"{file}: not a readable Python file ({exc}); fix the file") from None
    default: Tuple[str, ...] = ()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "REQUIRES" for t in node.targets):
            default = _literal(file, node.value)
    found: Set[Tuple[str, ...]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) == "register_case":
            given = next((k.value for k in node.keywords if k.arg == "requires"), None)
            requires = _literal(file, given) if given is not None else default
            if requires:
                found.add(requires)
    return found


def _called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _literal(file: Path, node: ast.AST) -> Tuple[str, ...]:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        value = None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise UserError(
            f"{file}:{getattr(node, 'lineno', '?')}: requires must be a literal list of strings, like "
            'requires=["kornia"] (nox reads it without importing the file)'
        )
    return tuple(value)


# Resolving ------------------------------------------------------------------------------------------------


def pip_environ() -> Dict[str, str]:
    """pip as a user's machine runs it: this machine's pip configuration files are not read."""
    return dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")


def constraints(prov: Provisioner) -> List[str]:
    """The environment's pins (and mmcv's runtime pins): what a case's requirements must fit."""
    runtime = list(prov.env.mmcv.runtime) if prov.env.mmcv else []
    return list(prov.env.pins) + runtime


def resolve(prov: Provisioner, venv: Path, requires: Sequence[str]) -> Resolution:
    """The newest versions of `requires` that fit the environment's venv and pins, by its own pip."""
    with tempfile.TemporaryDirectory() as tmp:
        pins, report = Path(tmp) / "constraints.txt", Path(tmp) / "report.json"
        pins.write_text("\n".join(constraints(prov)) + "\n")
        cmd = [str(venv_python(venv)), "-m", "pip", "install", "--dry-run", "--report", str(report)]
        cmd += ["-c", str(pins), *requires]
        done = subprocess.run(cmd, capture_output=True, text=True, env=pip_environ())
        if done.returncode != 0:
            return Resolution(tuple(requires), reason=pip_reason(done.stdout + "\n" + done.stderr))
        adds = {requirement_name(i["metadata"]["name"]): i["metadata"]["version"] for i in _installs(report)}
    names = [requirement_name(r) for r in requires]
    have = _installed(venv, [n for n in names if n not in adds])
    packages = {n: adds.get(n) or have.get(n) or "?" for n in names}
    return Resolution(tuple(requires), packages, tuple(f"{n}=={v}" for n, v in sorted(adds.items())))


def _installs(report: Path) -> List[dict]:
    return list(json.loads(report.read_text()).get("install") or [])


def _installed(venv: Path, names: Sequence[str]) -> Dict[str, str]:
    if not names:
        return {}
    code = "import json, sys, importlib.metadata as m\nout = {}\nfor n in sys.argv[1:]:\n"
    code += "    try: out[n] = m.version(n)\n    except m.PackageNotFoundError: pass\nprint(json.dumps(out))"
    done = subprocess.run([str(venv_python(venv)), "-c", code, *names], capture_output=True, text=True)
    return json.loads(done.stdout or "{}") if done.returncode == 0 else {}


def pip_reason(output: str) -> str:
    """pip's refusal in one line: the conflict's causes, or the requirement no version satisfies."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    causes = _section(lines, "The conflict is caused by:")
    if causes:
        head = next((line for line in lines if line.startswith("ERROR: Cannot install")), "")
        head = head.replace("ERROR: ", "").split(" because")[0]
        said = "; ".join(c.replace("(constraint)", "(this environment's pin)") for c in causes)
        return f"pip: {head}: {said}"[:400] if head else f"pip: {said}"[:400]
    missing = next((line for line in lines if "No matching distribution found" in line), None)
    python = next((line for line in lines if "require a different python version" in line), "")
    if missing:
        newest = python.split(": ")[-1].split(";")[-1].strip() if python else ""
        extra = f" (a different Python is needed by others: {newest} ...)" if newest else ""
        return ("pip: " + missing.replace("ERROR: ", "") + extra)[:400]
    errors = [line.replace("ERROR: ", "") for line in lines if line.startswith("ERROR:")]
    return "pip: " + (errors[0] if errors else (lines[-1] if lines else "failed with no message"))[:400]


def _section(lines: List[str], title: str) -> List[str]:
    if title not in lines:
        return []
    out = []
    for line in lines[lines.index(title) + 1 :]:
        if line.startswith(("To fix this", "ERROR:", "Additionally")):
            break
        out.append(line)
    return out


# Installing -----------------------------------------------------------------------------------------------


def requirement_venv(prov: Provisioner, venv: Path, resolution: Resolution) -> Path:
    """The environment's venv with the resolved requirements added: a copy of it (hard links where the disk
    allows), cached by the environment's venv (its pins) and what was added; the venv itself when it has all."""
    if not resolution.install:
        return venv
    digest = hashlib.sha1(json.dumps([venv.name, sorted(resolution.install)]).encode()).hexdigest()[:10]
    target = venv.parent / f"{venv.name}+req-{digest}"
    stamp = target / "requires.ok"
    if stamp.exists():
        prov.log(f"{prov.env.name}: reusing {target} for requires {resolution.key}")
        return target
    prov.log(f"{prov.env.name}: requires {resolution.key}: adding {', '.join(resolution.install)} in {target}")
    building = target.with_name(target.name + ".partial")
    shutil.rmtree(building, ignore_errors=True)
    shutil.copytree(venv, building, symlinks=True, copy_function=_link_or_copy)
    with tempfile.TemporaryDirectory() as tmp:
        pins = Path(tmp) / "constraints.txt"
        pins.write_text("\n".join(constraints(prov)) + "\n")
        cmd = [str(venv_python(building)), "-m", "pip", "install", "-q", "-c", str(pins), *resolution.install]
        if subprocess.run(cmd, env=pip_environ()).returncode != 0:
            added = ", ".join(resolution.install)
            raise UserError(f"{prov.env.name}: installing {added} failed; see pip's output above")
    (building / "requires.ok").write_text("\n".join(resolution.install) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    building.rename(target)
    return target


_PROBE = """
import importlib, importlib.metadata as m, sys
for name in sys.argv[1:]:
    try:
        top = (m.distribution(name).read_text("top_level.txt") or "").split()
    except m.PackageNotFoundError:
        top = []
    importlib.import_module(top[0] if top else name.replace("-", "_"))
"""


def import_failure(venv: Path, resolution: Resolution) -> Optional[str]:
    """Why a resolved requirement installs but does not import in the venv (a torchvision built against another
    torch build: "operator torchvision::nms does not exist"), in one line; None when each imports."""
    names = sorted(resolution.packages)
    # once per venv and versions: the answer is kept beside the cache's venvs, never inside a venv of the pins
    digest = hashlib.sha1(json.dumps([venv.name, sorted(resolution.packages.items())]).encode()).hexdigest()[:12]
    kept = venv.parent.parent / "probes" / f"{venv.name}-{digest}.txt"
    if kept.exists():
        said = kept.read_text().strip()
        return None if said == "ok" else said
    done = subprocess.run([str(venv_python(venv)), "-c", _PROBE, *names], capture_output=True, text=True)
    last = (done.stderr.strip().splitlines() or ["no message"])[-1]
    versions = ", ".join(f"{k} {v}" for k, v in sorted(resolution.packages.items()))
    said = "ok" if done.returncode == 0 else f"{versions} installs here but does not import: {last}"[:400]
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(said + "\n")
    return None if said == "ok" else said


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def write_plan(path: Path, groups: Sequence[Tuple[Resolution, Optional[Path]]]) -> Path:
    """The plan a run reads (--requirements-plan): per set of requirements, the versions and the venv's interpreter,
    or the reason."""
    entries = [
        {"requires": r.key, "packages": r.packages, "python": str(venv_python(v)) if v else None, "reason": r.reason}
        for r, v in groups
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"groups": entries}, indent=1, sort_keys=True) + "\n")
    return path
