"""The layout's rules, checked on the source: no import circles (imports inside functions count: they run too), no
private name imported from another module, worlds that stay out of each other, modules and functions of a readable
size, and the torch-free worlds free of torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set

from conftest import ROOT

PACKAGE = ROOT / "harness"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules() -> Dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _top_level_imports(path: Path) -> List[ast.ImportFrom]:
    """Imports run when the module is imported: not those inside functions or under TYPE_CHECKING."""
    tree = ast.parse(path.read_text())
    out = []
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            continue
        for sub in [node] if not isinstance(node, ast.If) else node.body:
            if isinstance(sub, ast.ImportFrom) and sub.module:
                out.append(sub)
    return out


def _imports(path: Path) -> List[ast.ImportFrom]:
    """Every `from harness... import` of a module, inside functions too; not those under TYPE_CHECKING (never run)."""
    tree = ast.parse(path.read_text())
    hidden = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test)
        for sub in ast.walk(node)
    }
    return [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and id(n) not in hidden]


def _graph() -> Dict[str, Set[str]]:
    modules = _modules()
    graph: Dict[str, Set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in _imports(path):
            target = node.module
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    graph[name].add(f"{target}.{alias.name}")
            if target in modules:
                graph[name].add(target)
            # importing a submodule imports its parent packages first
            parts = target.split(".")
            graph[name].update(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in modules)
    return graph


def test_no_import_circles():
    graph = _graph()
    state: Dict[str, int] = {}
    circles = []

    def visit(node: str, trail: List[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if nxt == node or (node.startswith(nxt + ".")):  # a package's own submodules import their parent
                continue
            if state.get(nxt) == 1:
                circles.append(trail[trail.index(nxt) :] + [nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert circles == []


def test_no_private_name_is_imported_from_another_module():
    offenders = []
    for name, path in _modules().items():
        for node in _top_level_imports(path) + [
            n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ImportFrom) and n.module
        ]:
            if not node.module.startswith("harness"):
                continue
            offenders += [
                f"{name}: {node.module}.{a.name}"
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
    assert offenders == []


def test_modules_and_functions_stay_readable():
    too_long = []
    for name, path in _modules().items():
        source = path.read_text()
        if len(source.splitlines()) > MAX_MODULE_LINES:
            too_long.append(f"{name}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}.{node.name}: {length} lines")
    assert too_long == []


def test_the_record_and_the_reporter_import_without_torch():
    code = (
        "import sys, harness.record, harness.report.model, harness.report.cli, harness.cli\n"
        "bad = [m for m in ('torch', 'onnx', 'onnxruntime', 'mmcv') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_replay_side_imports_neither_torch_nor_onnx():
    """A runtime environment holds a runtime and numpy only: what replays a graph must import there."""
    code = (
        "import sys, harness.cli, harness.replay.steps, harness.replay.worker, harness.replay.judge\n"
        "harness.cli.build_parser().parse_args(['replay', '--runtime', 'x'])\n"
        "bad = [m for m in ('torch', 'onnx', 'mmcv', 'pandas', 'jinja2') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_divergence_side_imports_neither_torch_nor_onnx():
    """Divergences are traced and located in runtime environments, which hold a runtime and numpy only."""
    code = (
        "import sys, harness.cli, harness.diverge.steps, harness.diverge.worker, harness.diverge.locate\n"
        "harness.cli.build_parser().parse_args(['diverge', '--runtime', 'x', '--phase', 'trace'])\n"
        "bad = [m for m in ('torch', 'onnx', 'mmcv', 'pandas', 'jinja2') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_graph_sees_imports_inside_functions():
    """The command line imports each command's steps only when it runs: those edges are in the graph all the same."""
    graph = _graph()
    assert "harness.run.steps" in graph["harness.cli"] and "harness.replay.steps" in graph["harness.cli"]
    assert "harness.worker.fingerprint" in graph["harness.run.steps"]  # imported inside discover()


# Worlds a module's imports must stay out of, inside functions too: the torch-free replay and converter reach no
# export worker and no parent of a run; the campaign layer and the parents never import a worker's executor.
FORBIDDEN = {
    "harness.replay": ("harness.worker", "harness.run", "harness.plan", "harness.strategies"),
    "harness.artifacts": ("harness.worker", "harness.run", "harness.replay", "harness.strategies"),
    "harness.diverge": ("harness.worker", "harness.run", "harness.plan", "harness.strategies", "harness.report"),
    "harness.campaign": ("harness.worker", "harness.run", "harness.replay", "harness.artifacts", "harness.plan"),
    "harness.run": ("harness.worker.executor", "harness.worker.pipeline", "harness.worker.loop", "harness.cli"),
    "harness.record": ("harness.",),
    "harness.strategies": ("harness.plan", "harness.run", "harness.campaign", "harness.replay", "harness.artifacts"),
}


def test_worlds_stay_out_of_each_other():
    offenders = []
    for name, path in _modules().items():
        banned = next((b for world, b in FORBIDDEN.items() if name == world or name.startswith(world + ".")), ())
        for node in _imports(path):
            target = node.module
            if target.startswith("harness.record") and name.startswith("harness.record"):
                continue
            offenders += [f"{name} imports {target}" for b in banned if target == b or target.startswith(b + ".")]
    assert offenders == []


def test_the_shared_flags_are_declared_once():
    """run, replay and convert take their shared flags from harness.campaign.flags alone."""
    import argparse
    import re

    from harness.campaign.flags import FLAGS, OUTPUT
    from harness.cli import build_parser

    # report and bench-op are no campaigns (their --out is the page, their --opset one number); the worker entry
    # points speak the pool's own protocol
    own = ("harness.report", "harness.bench", "harness.campaign.serve", "harness.worker.loop", "harness.replay.worker")
    written = [
        flag
        for name, path in _modules().items()
        if not name.startswith(own)
        for flag in re.findall(r'add_argument\(\s*"--([a-z0-9-]+)"', path.read_text())
    ]
    assert [f for f in written if f in FLAGS] == []
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name in ("run", "replay", "convert"):
        options = {o for a in commands[name]._actions for o in a.option_strings}
        assert {"--" + f for f in OUTPUT + ("jobs", "pin", "timeout", "memory-limit-mb")} <= options, name
    kinds = {name: {a.dest: a.type for a in commands[name]._actions} for name in ("run", "replay", "convert")}
    assert kinds["run"]["jobs"] is kinds["replay"]["jobs"] is kinds["convert"]["jobs"]
    assert kinds["run"]["device"] is kinds["replay"]["device"]  # a list in both, as one flag
