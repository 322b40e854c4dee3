"""The front doors: `nox -s matrix` (CPU), `nox -s bench-gpu` (CUDA), `nox -s report`, `nox -s tests`, `nox -s lint`.

Each environment under environments/ gets its own virtualenv, built once per set of pins in the cache
folder ($ONNX_COMPAT_CACHE, default ~/.cache/onnx-compat-matrix) and linked as .nox/<env>.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from harness.errors import UserError  # noqa: E402
from harness.host.environments import Environment, load_environment, load_environments  # noqa: E402
from harness.host.provision import Provisioner, link_into_repo  # noqa: E402

nox.options.sessions = ["matrix", "report"]
nox.options.default_venv_backend = "none"

CPU_ENVS = [e.name for e in load_environments(ROOT / "environments") if e.default]
EXTRA_ENVS = [e.name for e in load_environments(ROOT / "environments") if not e.default]
GPU_ENVS = [e.name for e in load_environments(ROOT / "environments" / "gpu", device="cuda")]
REPORT_PINS = ["jinja2==3.1.6", "pandas==3.1.1", "matplotlib==3.11.2", "numpy==2.4.6"]
TEST_PINS = REPORT_PINS + [
    "pytest==9.2.0",
    "hypothesis==6.170.17",
    "playwright==1.65.2",
    "ruff==0.17.6",
    "nox==2026.10.20",
]
# The reporter never imports torch: a small venv of its own.
REPORT_ENV = Environment(name="report", python="3.11", pins=tuple(REPORT_PINS), source=__file__)


def _environment(name: str):
    path = ROOT / "environments" / f"{name}.toml"
    if not path.exists():
        path = ROOT / "environments" / "gpu" / f"{name}.toml"
    if not path.exists():
        raise UserError(f"no environment {name!r}; the files under environments/ define: {', '.join(CPU_ENVS)}")
    return load_environment(path)


def _provision(session: nox.Session, name: str, extra=()) -> tuple:
    try:
        env = _environment(name)
        prov = Provisioner(env, log=session.log, extra=extra)
        venv = prov.venv()
    except UserError as exc:
        session.error(str(exc))
    link_into_repo(venv, ROOT, name)
    environ = {"PYTHONPATH": str(ROOT), "HARNESS_ENV": env.name, "PYTHONUNBUFFERED": "1"}
    reason = prov.mmcv_unavailable_reason(venv) if env.mmcv else "this environment installs no mmcv"
    if reason:
        environ["HARNESS_MMCV_UNAVAILABLE"] = reason
    return venv, environ


@nox.session(python=False)
@nox.parametrize("env", CPU_ENVS)
def matrix(session: nox.Session, env: str) -> None:
    """Run the CPU matrix in one environment (all by default); arguments after -- go to `harness run`."""
    _run_matrix(session, env)


def _run_matrix(session: nox.Session, env: str) -> None:
    venv, environ = _provision(session, env)
    session.run(
        str(venv / "bin" / "python"), "-m", "harness", "run", "--env", env, *session.posargs, env=environ, external=True
    )
    if not os.environ.get("MATRIX_NO_REPORT"):  # CI jobs per environment merge their results later
        session.notify("report")


@nox.session(python=False)
@nox.parametrize("env", EXTRA_ENVS)
def matrix_extra(session: nox.Session, env: str) -> None:
    """Environments kept out of the default matrix (`default = false` in their file), one by one."""
    _run_matrix(session, env)


@nox.session(name="bench-gpu", python=False)
@nox.parametrize("env", GPU_ENVS)
def bench_gpu(session: nox.Session, env: str) -> None:
    """The GPU side: the `gpu`-tagged cases on CUDA in fp32 and fp16; arguments after -- go to `harness run`.

    BENCH_GPU_PYTHON=/path/to/python uses that interpreter as it is (a provisioned GPU box without a
    package index) instead of building a venv.
    """
    if not Path("/proc/driver/nvidia/version").exists() and not shutil.which("nvidia-smi"):
        session.error("bench-gpu: no NVIDIA GPU on this machine (no driver, no nvidia-smi); run it on a GPU machine")
    args = ["-m", "harness", "run", "--env", env, "--device", "cuda", "--dtype", "float32,float16", "--tag", "gpu"]
    python = os.environ.get("BENCH_GPU_PYTHON")
    if python:
        environ = {"PYTHONPATH": str(ROOT), "HARNESS_ENV": env, "PYTHONUNBUFFERED": "1"}
    else:
        venv, environ = _provision(session, env)
        python = str(venv / "bin" / "python")
    session.run(python, *args, *session.posargs, env=environ, external=True)
    if not os.environ.get("MATRIX_NO_REPORT"):
        session.notify("report")


@nox.session(python=False)
def report(session: nox.Session) -> None:
    """Merge every results file under results/ (or the paths given after --) into reports/index.html."""
    try:
        venv = Provisioner(REPORT_ENV, log=session.log).venv()
    except UserError as exc:
        session.error(str(exc))
    environ = {"PYTHONPATH": str(ROOT)}
    # A matrix session notifies this one with its own arguments: take only those meant for the report.
    mine = any(a.split("=")[0] in ("--results", "--out", "--title") for a in session.posargs)
    args = (session.posargs if mine else None) or [
        "--results",
        str(ROOT / "results"),
        "--out",
        str(ROOT / "reports" / "index.html"),
    ]
    session.run(str(venv / "bin" / "python"), "-m", "harness", "report", *args, env=environ, external=True)


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """The test suite, in the torch2 environment (real torch, onnxruntime, mmcv); arguments go to pytest."""
    venv, environ = _provision(session, "torch2", extra=TEST_PINS)
    environ["PATH"] = str(venv / "bin") + os.pathsep + os.environ.get("PATH", "")
    if not Path(os.environ.get("REPORT_CHROMIUM", "/usr/bin/chromium")).exists():
        session.warn("no Chromium: the page's browser test will skip; install it with `apt-get install chromium`")
    session.run(str(venv / "bin" / "python"), "-m", "pytest", *(session.posargs or ["-q"]), env=environ, external=True)


@nox.session(python=False)
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the project."""
    venv, environ = _provision(session, "torch2", extra=TEST_PINS)
    ruff = str(venv / "bin" / "ruff")
    session.run(ruff, "check", ".", external=True)
    session.run(ruff, "format", "--check", ".", external=True)
