"""The front doors: `nox -s matrix` (CPU), `nox -s bench-gpu` (CUDA), `nox -s report`, `nox -s tests`, `nox -s lint`.

`nox -s matrix` runs every export environment (environments/*.toml), then replays their stored graphs in every
runtime environment (environments/runtimes/*.toml: `nox -s "replay(runtime='ort1.14')"` runs one), rendering the
page after each, so a long first run shows a partial page early. Each environment gets its own virtualenv, built
once per set of pins in the cache folder ($ONNX_COMPAT_CACHE, default ~/.cache/onnx-compat-matrix) and linked as
.nox/<env>. MATRIX_NO_REPORT=1 renders no page; MATRIX_NO_REPLAY=1 chains no replays (CI jobs split the work).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from harness.campaign.files import kind_of_file  # noqa: E402
from harness.errors import UserError  # noqa: E402
from harness.host.environments import (  # noqa: E402
    RUNTIME_DIR,
    TOOLS_DIR,
    Environment,
    ladder,
    load_environment,
    load_environments,
)
from harness.host.provision import Provisioner, link_into_repo, venv_bin, venv_python  # noqa: E402
from harness.host.requirements import (  # noqa: E402
    declared_requirements,
    import_failure,
    requirement_venv,
    resolve,
    write_plan,
)
from harness.record import RecordKind, platform_tag  # noqa: E402

nox.options.sessions = ["matrix", "report"]

# One worker per core, each pinned to its core and timing with one thread: on a small machine a worker's timing is
# not disturbed by the other's export, and the export stages (single-threaded Python) run side by side. Pinning is
# Linux's (os.sched_setaffinity); elsewhere (Windows) the workers are as many but left to the scheduler.
PINNABLE = hasattr(os, "sched_getaffinity")
CORES = len(os.sched_getaffinity(0)) if PINNABLE else (os.cpu_count() or 1)
PARALLEL = ["--jobs", str(CORES), "--threads", "1"] + (["--pin"] if PINNABLE else [])
nox.options.default_venv_backend = "none"

CPU_ENVS = [e.name for e in load_environments(ROOT / "environments") if e.default]
EXTRA_ENVS = [e.name for e in load_environments(ROOT / "environments") if not e.default]
GPU_ENVS = [e.name for e in load_environments(ROOT / "environments" / "gpu", device="cuda")]


CPU_RUNTIMES = [e.name for e in ladder("cpu") if e.default]
GPU_RUNTIMES = [e.name for e in ladder("cuda") if e.default]
ALL_RUNTIMES = [e.name for d in ("cpu", "cuda") for e in ladder(d)]
REPORT_PINS = ["jinja2==3.1.6", "pandas==3.1.1", "matplotlib==3.11.2", "numpy==2.4.6"]
TEST_PINS = REPORT_PINS + [
    "pytest==9.2.0",
    "hypothesis==6.170.17",
    "playwright==1.65.2",
    "ruff==0.17.6",
    "nox==2026.10.20",
    "check-jsonschema==0.39.0",
    "onnxconverter-common==1.16.0",  # the fp16 converter, for the conversion tests
    # the replay's OpenVINO adapter, tested beside onnxruntime's; 2026.4.1 has no manylinux_2_28 aarch64 wheel
    "openvino==2026.4.1; platform_machine != 'aarch64'",
]
# The reporter never imports torch: a small venv of its own.
REPORT_ENV = Environment(name="report", python="3.11", pins=tuple(REPORT_PINS), source=__file__)


def _environment(name: str) -> Environment:
    for folder in (ROOT / "environments", ROOT / "environments" / "gpu", RUNTIME_DIR, TOOLS_DIR):
        if (folder / f"{name}.toml").exists():
            return load_environment(folder / f"{name}.toml")
    raise UserError(
        f"no environment {name!r}; the files under environments/ define {', '.join(CPU_ENVS)} "
        f"and the runtimes {', '.join(ALL_RUNTIMES)}"
    )


def _provision(session: nox.Session, name: str, extra=(), build_mmcv: bool = True) -> tuple:
    """The environment's venv and the variables its harness runs with; with build_mmcv=False an mmcv that is not
    in the wheel cache is left for Provisioner.install_mmcv (the matrix runs the other cells first)."""
    try:
        env = _environment(name)
        prov = Provisioner(env, log=session.log, extra=extra)
        venv = prov.venv(build_mmcv=build_mmcv)
    except UserError as exc:
        session.error(str(exc))
    link_into_repo(venv, ROOT, name)
    return prov, venv, _environ(prov, venv)


def _environ(prov: Provisioner, venv: Path) -> dict:
    env = prov.env
    # UTF-8 mode: files and pipes read and written as UTF-8 on every platform (Windows would use its ANSI code page)
    environ = {"PYTHONPATH": str(ROOT), "HARNESS_ENV": env.name, "PYTHONUNBUFFERED": "1", "PYTHONUTF8": "1"}
    if env.runtime:
        environ.update(HARNESS_RUNTIME=env.name, HARNESS_RUNTIME_KIND=env.runtime)
        return environ
    reason = prov.mmcv_unavailable_reason(venv) if env.mmcv else "this environment installs no mmcv"
    if reason:
        environ["HARNESS_MMCV_UNAVAILABLE"] = reason
    return environ


@nox.session(python=False)
@nox.parametrize("env", CPU_ENVS)
def matrix(session: nox.Session, env: str) -> None:
    """Run the CPU matrix in one environment (all by default); arguments after -- go to `harness run`."""
    _run_matrix(session, env)


def _run_matrix(session: nox.Session, env: str) -> None:
    name = records_env_name(env)
    shown = env if name == env else f"{env}, recorded as {name}"
    place = _place(env, CPU_ENVS)
    session.log(f"export environment {shown} ({place}); then replays in {', '.join(CPU_RUNTIMES)}")
    prov, venv, environ = _provision(session, env, build_mmcv=False)
    plan, overlays = _requirements(session, prov, venv)
    if prov.env.mmcv and not prov.mmcv_settled(venv):
        # a cold cache: the page shows this environment's other cells before the compiler takes the cores, and
        # nothing is timed while it builds
        session.log(f"{env} ({place}): mmcv is not built yet: the cells that need no mmcv first, then the page")
        _harness_run(session, venv, environ, name, ["--without", "mmcv", *plan])
        _render(session, f"after {env} without its mmcv cells")
        session.log(f"{env} ({place}): building mmcv, then its cells")
        try:
            for target in [venv, *overlays]:  # the requirements' venvs were copied from this one before mmcv
                prov.install_mmcv(target)
        except UserError as exc:
            session.error(str(exc))
        environ = _environ(prov, venv)
    _harness_run(session, venv, environ, name, plan)
    _render(session, f"after {env}")
    if not os.environ.get("MATRIX_NO_REPLAY"):  # once every environment has exported: convert, then every runtime
        CHAIN["diverge"] = True  # the last session of the chain renders the page whatever its age
        session.notify("convert", posargs=[])
        chained = [a for a in session.posargs if a in CHAINED_FLAGS]
        for runtime in CPU_RUNTIMES:
            session.notify(f"replay(runtime='{runtime}')", posargs=chained)
        session.notify("diverge", posargs=[])


# The matrix's flags its replays take too: `nox -s matrix -- --cost-sweeps` times the sweeps on every runtime.
CHAINED_FLAGS = ("--cost-sweeps",)


def _requirements(session: nox.Session, prov: Provisioner, venv: Path) -> tuple:
    """Each set of requirements the case files declare, resolved against this environment's pins and installed in a
    venv of its own; the run's `--requirements-plan` arguments and those venvs."""
    try:
        sets = declared_requirements(_cases_dirs(session.posargs))
        groups = []
        for requires in sets:
            resolution = resolve(prov, venv, requires)
            if resolution.reason:
                session.log(f"{prov.env.name}: requires {resolution.key}: nothing fits: {resolution.reason}")
                groups.append((resolution, None))
                continue
            target = requirement_venv(prov, venv, resolution)
            failure = import_failure(target, resolution)
            if failure:
                session.log(f"{prov.env.name}: requires {resolution.key}: {failure}")
                groups.append((dataclasses.replace(resolution, reason=failure), None))
                continue
            versions = ", ".join(f"{k} {v}" for k, v in sorted(resolution.packages.items()))
            session.log(f"{prov.env.name}: requires {resolution.key}: {versions}")
            groups.append((resolution, None if target == venv else target))
    except UserError as exc:
        session.error(str(exc))
    if not groups:
        return [], []
    path = write_plan(ROOT / ".nox" / f"{prov.env.name}.requirements.json", groups)
    return ["--requirements-plan", str(path)], [target for _, target in groups if target]


def _cases_dirs(posargs) -> list:
    """The --cases-dir folders among the arguments for `harness run`."""
    found = [a.split("=", 1)[1] for a in posargs if a.startswith("--cases-dir=")]
    found += [posargs[i + 1] for i, a in enumerate(posargs[:-1]) if a == "--cases-dir"]
    return found


def _harness_run(session: nox.Session, venv: Path, environ: dict, name: str, extra=()) -> None:
    args = ["-m", "harness", "run", "--env", name, "--artifacts", str(ROOT / "artifacts"), *PARALLEL, *extra]
    session.run(str(venv_python(venv)), *args, *session.posargs, env=environ, external=True)


def host_platform() -> str:
    """This machine in the words of environments/*.toml `platforms`: linux_x86_64, linux_aarch64, win_amd64."""
    return platform_tag(platform.platform())


def records_env_name(env: str, here: str = "") -> str:
    """The name an environment's records carry: with the platform (torch2@linux_aarch64) off linux_x86_64.

    A record's identity holds the environment's name, not the platform: without it, two platforms' records of
    one environment would supersede each other on the merged page.
    """
    here = here or host_platform()
    return env if here == "linux_x86_64" else f"{env}@{here}"


def _place(name: str, names: list) -> str:
    return f"{names.index(name) + 1} of {len(names)}" if name in names else "outside the defaults"


@nox.session(python=False)
@nox.parametrize("runtime", ALL_RUNTIMES)
def replay(session: nox.Session, runtime: str) -> None:
    """Judge every graph stored under artifacts/ in one runtime environment; arguments after -- go to harness replay."""
    env = _environment(runtime)
    if env.device == "cuda" and not _has_gpu():
        session.error(f"replay({runtime}): a CUDA runtime, and this machine has no NVIDIA GPU; run it on a GPU machine")
    session.log(f"runtime {runtime} ({_place(runtime, CPU_RUNTIMES)}): {env.description}")
    _, venv, environ = _provision(session, runtime)
    if env.device == "cuda":  # the CUDA libraries come as nvidia-* wheels; older onnxruntime-gpu finds them here
        libs = sorted(str(p) for p in venv.glob("lib/python*/site-packages/nvidia/*/lib"))
        environ["LD_LIBRARY_PATH"] = os.pathsep.join(libs + [os.environ.get("LD_LIBRARY_PATH", "")])
    args = ["--runtime", runtime, "--runtime-kind", env.runtime, "--device", env.device]
    args += ["--precision", ",".join(env.precisions)]
    args += ["--skip-tag", ",".join(env.skip_tags)] if env.skip_tags else []
    args += ["--artifacts", str(ROOT / "artifacts"), "--results-dir", str(ROOT / "results"), *PARALLEL]
    session.run(str(venv_python(venv)), "-m", "harness", "replay", *args, *session.posargs, env=environ, external=True)
    _render(session, f"after the replay in {runtime}")


@nox.session(python=False)
def convert(session: nox.Session) -> None:
    """The stored fp32 graphs of the real models to fp16 and int8, once; arguments after -- go to harness convert."""
    _, venv, environ = _provision(session, "convert")
    # one converter worker per core, as the exports and replays have: a single worker left a core idle
    args = ["--artifacts", str(ROOT / "artifacts"), "--results-dir", str(ROOT / "results")]
    args += PARALLEL[:2] + PARALLEL[4:]  # --jobs N (--pin): a converter has no thread setting of ours
    session.run(str(venv_python(venv)), "-m", "harness", "convert", *args, *session.posargs, env=environ, external=True)


# The default matrix locates every fp32 mismatch (about 285) and the first converted ones within its time budget;
# `nox -s diverge -- --budget 2000` locates them all (about 1200: 15 more minutes on this 2-core machine).
DIVERGE_BUDGET = 300


@nox.session(python=False)
def diverge(session: nox.Session) -> None:
    """Where each mismatch first parts from a trusted run (harness diverge, budgeted, resumable): every runtime of the
    ladder traces the graphs it is trusted for, then every mismatching runtime locates its mismatches, an exporting
    environment's own onnxruntime where the ladder lacks its release. Arguments after -- go to each harness diverge."""
    common = ["--artifacts", str(ROOT / "artifacts"), "--results-dir", str(ROOT / "results"), *PARALLEL[:2]]
    common += PARALLEL[4:] + ["--budget", str(DIVERGE_BUDGET)]
    work = _diverge_plan(session, common)
    for phase in ("trace", "locate"):
        for runtime in CPU_RUNTIMES:
            env = _environment(runtime)
            if [env.runtime, env.pin(env.runtime)] not in work[phase]:
                continue  # no graph to trace, or no mismatch to locate, in this runtime
            _, venv, environ = _provision(session, runtime)
            args = ["--phase", phase, "--runtime", runtime, "--runtime-kind", env.runtime]
            session.log(f"diverge: {phase} in {runtime}")
            run = [str(venv_python(venv)), "-m", "harness", "diverge", *args, *common, *session.posargs]
            session.run(*run, env=environ, external=True)
    ladder_versions = {_environment(r).pin("onnxruntime") for r in CPU_RUNTIMES}
    for env in CPU_ENVS:  # an exporting environment's own onnxruntime, judged only there
        own = _environment(env).pin("onnxruntime")
        if own not in ladder_versions and ["onnxruntime", own] in work["locate"]:
            _, venv, environ = _provision(session, env, build_mmcv=False)
            args = ["--runtime", records_env_name(env), "--runtime-kind", "onnxruntime", *common, *session.posargs]
            session.log(f"diverge: locate in {env} (its onnxruntime {own})")
            session.run(str(venv_python(venv)), "-m", "harness", "diverge", *args, env=environ, external=True)
    _render(session, "after the divergences", final=True)


def _diverge_plan(session: nox.Session, common: list) -> dict:
    """Which runtimes have work in each phase, read once (each harness process reads every results file)."""
    newest = CPU_RUNTIMES[-1] if CPU_RUNTIMES else None
    newest = next((r for r in reversed(CPU_RUNTIMES) if _environment(r).runtime == "onnxruntime"), newest)
    _, venv, environ = _provision(session, newest)
    args = ["--phase", "plan", "--runtime", newest, "--runtime-kind", "onnxruntime", *common, *session.posargs]
    out = session.run(
        str(venv_python(venv)), "-m", "harness", "diverge", *args, env=environ, external=True, silent=True
    )
    lines = [line for line in str(out or "").splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"trace": [], "locate": []}


def _has_gpu() -> bool:
    return Path("/proc/driver/nvidia/version").exists() or bool(shutil.which("nvidia-smi"))


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
    if not _has_gpu():
        session.error("bench-gpu: no NVIDIA GPU on this machine (no driver, no nvidia-smi); run it on a GPU machine")
    args = ["-m", "harness", "run", "--env", env, "--device", "cuda", "--dtype", "float32,float16", "--tag", "gpu"]
    python = os.environ.get("BENCH_GPU_PYTHON")
    if python:
        environ = {"PYTHONPATH": str(ROOT), "HARNESS_ENV": env, "PYTHONUNBUFFERED": "1", "PYTHONUTF8": "1"}
    else:
        _, venv, environ = _provision(session, env)
        python = str(venv_python(venv))
    session.run(python, *args, "--artifacts", str(ROOT / "artifacts"), *session.posargs, env=environ, external=True)
    _render(session, f"after {env}")
    if not os.environ.get("MATRIX_NO_REPLAY"):
        for runtime in GPU_RUNTIMES:
            session.notify(f"replay(runtime='{runtime}')", posargs=[])


@nox.session(python=False)
def report(session: nox.Session) -> None:
    """Merge every results file under results/ (or the paths given after --) into reports/index.html."""
    # A session notified by another gets its arguments: take only those meant for the report.
    mine = any(a.split("=")[0] in ("--results", "--out", "--title") for a in session.posargs)
    _render(session, "", (session.posargs if mine else None) or None, always=True)


def _render(session: nox.Session, when: str, args=None, always: bool = False, final: bool = False) -> None:
    """The page from every results file so far (each session renders it, so a long run shows a partial page).

    A session that changed no results file (a resumed run with nothing left to measure) keeps the page as it is; in
    a chain whose last session renders it (`final`), a page younger than PAGE_REFRESH_S is left for that one.
    """
    if os.environ.get("MATRIX_NO_REPORT") and not always:  # CI jobs per environment merge their results later
        return
    page = ROOT / "reports" / "index.html"
    inputs = "" if args else _page_inputs()
    if inputs and not always and page.exists() and _read(RENDERED_FROM) == inputs:
        session.log(f"page unchanged {when}: no results file changed since it was rendered ({_results_so_far()})")
        return
    age = time.time() - page.stat().st_mtime if page.exists() else None
    if CHAIN.get("diverge") and not (always or final) and age is not None and age < PAGE_REFRESH_S:
        session.log(f"page left for now {when}: rendered {age:.0f} s ago; the divergences render it at the end")
        return
    try:
        venv = Provisioner(REPORT_ENV, log=session.log).venv()
    except UserError as exc:
        session.error(str(exc))
    args = args or ["--results", str(ROOT / "results"), "--out", str(page)]
    session.run(
        str(venv_python(venv)),
        "-m",
        "harness",
        "report",
        *args,
        env={"PYTHONPATH": str(ROOT), "PYTHONUTF8": "1"},
        external=True,
    )
    if inputs:
        RENDERED_FROM.write_text(inputs)
    if when:
        session.log(f"page rendered {when}: {page.relative_to(ROOT)} ({_results_so_far()})")


# A long run refreshes its partial page at most this often; the report session (the last of `nox -s matrix`) always
# renders it. Rendering every file takes 15 to 35 s: after each of 15 sessions it would cost 6 minutes. The default
# matrix shows its first environment's page after 3 minutes, then the whole one.
PAGE_REFRESH_S = 1800
CHAIN: dict = {}  # what `nox -s matrix` queued after the environments in this nox process
# What reports/index.html was last rendered from: its results files (name, size, time) and the reporter's code.
RENDERED_FROM = ROOT / "reports" / ".rendered-from"


def _page_inputs() -> str:
    digest = hashlib.sha256()
    for path in sorted((ROOT / "results").rglob("*.jsonl")):
        stat = path.stat()
        digest.update(f"{path.relative_to(ROOT)} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    for folder in ("harness/report", "harness/record", "harness/judge"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".j2", ".html", ".css", ".js"):
                digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _results_so_far() -> str:
    files = {kind_of_file(p) for p in (ROOT / "results").glob("*.jsonl")}
    exported = [e for e in CPU_ENVS if (RecordKind.EXPORT, records_env_name(e)) in files]
    replayed = [r for r in CPU_RUNTIMES if (RecordKind.REPLAY, r) in files]
    return (
        f"export environments {len(exported)} of {len(CPU_ENVS)}: {', '.join(exported) or 'none yet'}; "
        f"runtimes {len(replayed)} of {len(CPU_RUNTIMES)}: {', '.join(replayed) or 'none yet'}"
    )


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """The test suite, in the torch2 environment (real torch, onnxruntime, mmcv); arguments go to pytest."""
    _, venv, environ = _provision(session, "torch2", extra=TEST_PINS)
    environ["PATH"] = str(venv_bin(venv)) + os.pathsep + os.environ.get("PATH", "")
    if not Path(os.environ.get("REPORT_CHROMIUM", "/usr/bin/chromium")).exists():
        session.warn("no Chromium: the page's browser test will skip; install it with `apt-get install chromium`")
    session.run(str(venv_python(venv)), "-m", "pytest", *(session.posargs or ["-q"]), env=environ, external=True)


@nox.session(python=False)
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the project."""
    _, venv, _ = _provision(session, "torch2", extra=TEST_PINS)
    ruff = str(venv_bin(venv) / "ruff")
    session.run(ruff, "check", ".", external=True)
    session.run(ruff, "format", "--check", ".", external=True)
