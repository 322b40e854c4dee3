"""The CI workflow is only run on GitHub: check offline that it is valid and that its plan names real nox sessions."""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from ruamel.yaml import YAML

from harness.host.environments import PLATFORMS
from harness.record import platform_tag

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "matrix.yml"
NOXFILE = ROOT / "noxfile.py"
# The hosted runner for each platform an export environment may declare.
RUNNERS = {"linux_x86_64": "ubuntu-22.04", "linux_aarch64": "ubuntu-24.04-arm", "win_amd64": "windows-2022"}
# Any attempt to go online fails at once: the schema vendored in check-jsonschema must be all it reads.
OFFLINE = {k: "http://127.0.0.1:9" for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
REPLAY_SESSION = re.compile(r"^replay\(runtime='[^'\s]+'\)$")
RUNTIME_FIXTURES = {
    "ort-old.toml": 'name = "ort1.8"\npython = "3.8"\nruntime = "onnxruntime"\npins = ["onnxruntime==1.8.1"]\n',
    "openvino.toml": 'name = "openvino"\npython = 3.12\nruntime = "openvino"\npins = ["openvino==2025.1.0"]\n',
    "ort-off.toml": 'name = "ort-off"\npython = "3.9"\nruntime = "onnxruntime"\npins = []\ndefault = false\n',
    "ort-gpu.toml": 'name = "ort-gpu"\npython = "3.11"\nruntime = "onnxruntime"\npins = []\ndevice = "cuda"\n',
}
EXPORT_FIXTURES = {
    "x86only.toml": 'name = "x86only"\npython = "3.9"\npins = []\nplatforms = ["linux_x86_64"]\n',
    "unsaid.toml": 'name = "unsaid"\npython = "3.9"\npins = []\n',  # no platforms: linux_x86_64 alone
    "winarm.toml": 'name = "winarm"\npython = "3.12"\npins = []\nplatforms = ["win_amd64", "linux_aarch64"]\n',
}


def _load() -> dict:
    # YAML 1.2 (ruamel): the `on:` key stays a string, as GitHub reads it.
    return YAML(typ="safe").load(WORKFLOW.read_text(encoding="utf-8"))


def _check_jsonschema(path: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", "--no-cache"]
    env = {**os.environ, **OFFLINE, "NO_PROXY": "", "no_proxy": ""}
    return subprocess.run([*cmd, str(path)], capture_output=True, text=True, env=env, timeout=120)


def _steps(job: dict, pattern: str) -> list:
    return [s["run"] for s in job["steps"] if re.search(pattern, s.get("run", ""))]


def _run_plan(root: Path, tmp_path: Path) -> dict:
    """Run the plan job's inline script as GitHub does (`shell: python`: a file run by python) and read its outputs."""
    (step,) = [s for s in _load()["jobs"]["plan"]["steps"] if s.get("id") == "list"]
    assert step["shell"] == "python"
    script, output = tmp_path / "plan.py", tmp_path / "github_output"
    script.write_text(step["run"], encoding="utf-8")
    output.write_text("", encoding="utf-8")
    env = {**os.environ, "GITHUB_OUTPUT": str(output)}
    proc = subprocess.run([sys.executable, str(script)], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text(encoding="utf-8").splitlines())
    assert set(outputs) == set(_load()["jobs"]["plan"]["outputs"])
    return {key: json.loads(value) for key, value in outputs.items()}


def _tomls(folder: Path) -> list:
    return [tomllib.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.toml"))]


def _expected(root: Path) -> dict:
    runtimes = [d for d in _tomls(root / "environments" / "runtimes") if d.get("default", True)]
    return {
        "include": [
            {"env": d["name"], "python": str(d["python"]), "platform": p, "runner": RUNNERS[p]}
            for d in _tomls(root / "environments")
            if d.get("default", True)
            for p in d.get("platforms", ["linux_x86_64"])
            if p in RUNNERS
        ],
        "runtimes": [
            {"runtime": d["name"], "python": str(d["python"])} for d in runtimes if d.get("device", "cpu") != "cuda"
        ],
        "gpu_runtimes": [d["name"] for d in runtimes if d.get("device") == "cuda"],
        "convert_python": str(tomllib.loads((root / "environments" / "tools" / "convert.toml").read_text())["python"]),
    }


def _fill(text: str, **matrix: str) -> str:
    """The text with the job's ${{ matrix.KEY }} filled in from a plan row."""
    for key, value in matrix.items():
        text = text.replace("${{ matrix." + key + " }}", value)
    assert "${{ matrix." not in text, text
    return text


def _session(run: str, **matrix: str) -> str:
    """The session a `nox -s "..."` line names, with the job's ${{ matrix.KEY }} filled in."""
    args = shlex.split(_fill(run, **matrix))
    return args[args.index("-s") + 1]


def _gpu_sessions(tmp_path: Path, names: list) -> list:
    """Run bench-gpu's replay step in bash with a stand-in python3 that records its arguments."""
    (step,) = [s for s in _load()["jobs"]["bench-gpu"]["steps"] if "GPU_RUNTIMES" in s.get("env", {})]
    assert step["shell"] == "bash"
    bindir, args = tmp_path / "bin", tmp_path / "args"
    bindir.mkdir()
    (bindir / "python3").write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {shlex.quote(str(args))}\n")
    (bindir / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "GPU_RUNTIMES": " ".join(names)}
    subprocess.run(["bash", "-e", "-c", step["run"]], env=env, check=True, timeout=60)
    argv = args.read_text(encoding="utf-8").splitlines()
    assert argv[:3] == ["-m", "nox", "-s"] and argv[-2:] == ["--", "--quiet"]
    return argv[3:-2]


def _noxfile_functions(*names: str, **globals_: object) -> dict:
    """These top-level functions of noxfile.py, as written there, without importing it (and nox, and harness)."""
    tree = ast.parse(NOXFILE.read_text(encoding="utf-8"))
    nodes = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    assert sorted(n.name for n in nodes) == sorted(names)
    namespace = {"platform": platform, "sys": sys, **globals_}
    exec(compile(ast.Module(body=nodes, type_ignores=[]), str(NOXFILE), "exec"), namespace)
    return {name: namespace[name] for name in names}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of environments/ with export files declaring other platforms, and runtime files of every kind."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "environments", root / "environments", ignore=shutil.ignore_patterns("runtimes"))
    for name, text in EXPORT_FIXTURES.items():
        (root / "environments" / name).write_text(text, encoding="utf-8")
    (root / "environments" / "runtimes").mkdir()
    for name, text in RUNTIME_FIXTURES.items():
        (root / "environments" / "runtimes" / name).write_text(text, encoding="utf-8")
    return root


def test_the_workflow_is_valid_for_githubs_schema():
    proc = _check_jsonschema(WORKFLOW)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok -- validation done" in proc.stdout


def test_the_schema_check_rejects_a_job_without_runs_on(tmp_path):
    yaml = YAML()  # round trip: the copy differs from the workflow by this one key
    workflow = yaml.load(WORKFLOW.read_text(encoding="utf-8"))
    del workflow["jobs"]["replay"]["runs-on"]
    broken = tmp_path / "matrix.yml"
    with open(broken, "w", encoding="utf-8") as fh:
        yaml.dump(workflow, fh)
    proc = _check_jsonschema(broken)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "$.jobs.replay: 'runs-on' is a required property" in proc.stdout


def test_the_plan_lists_the_default_environments_and_cpu_runtimes_of_the_repo(tmp_path):
    assert _run_plan(ROOT, tmp_path) == _expected(ROOT)


def test_the_plan_gives_each_platform_an_environment_declares_a_row_on_its_runner(tree, tmp_path):
    rows = {}
    for row in _run_plan(tree, tmp_path)["include"]:
        rows.setdefault(row["env"], []).append((row["platform"], row["runner"]))
    arm, x86 = ("linux_aarch64", "ubuntu-24.04-arm"), ("linux_x86_64", "ubuntu-22.04")
    win = ("win_amd64", "windows-2022")
    for env in ("torch1.8", "torch1.12", "torch2"):  # the repo's files declare all three platforms
        assert rows[env] == [x86, win, arm], env
    assert rows["x86only"] == [x86] and rows["unsaid"] == [x86]
    assert rows["winarm"] == [win, arm]
    assert set(RUNNERS) == set(PLATFORMS)  # every platform an environment file may declare has its runner


def test_the_windows_rows_build_mmcv_with_msvc_and_run_every_step_in_bash():
    matrix = _load()["jobs"]["matrix"]
    assert matrix["defaults"]["run"]["shell"] == "bash"  # `nox -s ... -- --quiet` as on Linux
    (msvc,) = [s for s in matrix["steps"] if s.get("uses", "").startswith("ilammy/msvc-dev-cmd@")]
    assert msvc["if"] == "runner.os == 'Windows'"
    steps = [s.get("uses") or s.get("name") for s in matrix["steps"]]
    assert steps.index(msvc["uses"]) < steps.index(next(n for n in steps if n and n.startswith("nox -s")))
    (nox_step,) = [s for s in matrix["steps"] if s.get("run", "").startswith("nox -s")]
    assert nox_step["env"]["DISTUTILS_USE_SDK"] == "${{ runner.os == 'Windows' && '1' || '' }}"
    assert _load()["env"]["PYTHONUTF8"] == "1"


def test_each_platform_row_uploads_under_its_own_names_and_the_later_jobs_download_them_all(tree, tmp_path):
    jobs, plan = _load()["jobs"], _run_plan(tree, tmp_path)
    matrix = jobs["matrix"]
    assert matrix["runs-on"] == "${{ matrix.runner }}"
    uploads = [s["with"]["name"] for s in matrix["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    names = [_fill(name, **row) for row in plan["include"] for name in uploads]
    assert len(names) == len(set(names)) == 2 * len(plan["include"])
    assert "results-torch2-linux_aarch64" in names and "artifacts-torch2-linux_aarch64" in names
    (cache,) = [s for s in matrix["steps"] if s.get("uses", "").startswith("actions/cache")]
    assert "${{ runner.arch }}" in cache["with"]["key"]  # an aarch64 mmcv wheel is no use on x86_64
    # the built wheels alone: a failed build's marker (wheels/<key>.failed) is not carried to the next run
    assert cache["with"]["path"] == "~/.cache/onnx-compat-matrix/wheels/*/*.whl"
    assert not fnmatch.fnmatch(
        "~/.cache/onnx-compat-matrix/wheels/mmcv-full-1.7.2_cp38_cpu.failed", cache["with"]["path"]
    )
    assert jobs["replay"]["runs-on"] == "ubuntu-22.04"  # graphs exported on every platform are judged on x86_64
    (graphs,) = [s["with"] for s in jobs["replay"]["steps"] if s.get("uses", "").startswith("actions/download")]
    (results,) = [s["with"] for s in jobs["report"]["steps"] if s.get("uses", "").startswith("actions/download")]
    assert all(fnmatch.fnmatch(n, graphs["pattern"]) == n.startswith("artifacts-") for n in names)
    assert all(fnmatch.fnmatch(n, results["pattern"]) == n.startswith("results-") for n in names)


def test_the_conversions_of_every_platforms_graphs_reach_every_replay_and_the_report(tree, tmp_path):
    jobs, plan = _load()["jobs"], _run_plan(tree, tmp_path)
    convert = jobs["convert"]
    assert set(convert["needs"]) == {"plan", "matrix"} and "!cancelled()" in convert["if"]
    assert "convert" in jobs["replay"]["needs"] and "convert" in jobs["report"]["needs"]
    assert "nox -s convert" in _steps(convert, r"^nox ")
    setup = next(s["with"] for s in convert["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert setup["python-version"].splitlines() == ["${{ needs.plan.outputs.convert_python }}", "3.11"]
    assert plan["convert_python"] == "3.11"  # environments/tools/convert.toml's
    (graphs,) = [s["with"] for s in convert["steps"] if s.get("uses", "").startswith("actions/download")]
    (replayed,) = [s["with"] for s in jobs["replay"]["steps"] if s.get("uses", "").startswith("actions/download")]
    assert graphs["pattern"] == replayed["pattern"] == "artifacts-*" and graphs["merge-multiple"] is True
    uploads = {s["with"]["name"]: s["with"]["path"] for s in convert["steps"] if "upload-artifact" in s.get("uses", "")}
    assert fnmatch.fnmatch("artifacts-converted", replayed["pattern"]) and "artifacts-converted" in uploads
    assert fnmatch.fnmatch("results-convert", "results-*") and uploads["results-convert"] == "results/*.jsonl"
    # the precision folders the store keeps conversions in (artifacts/<env>/<cell>/<precision>/), fp32 left out
    from harness.record.precisions import CONVERSIONS  # a runtime precision stores no graph of its own

    kept = uploads["artifacts-converted"].split()
    assert kept == [f"artifacts/*/*/{p}/" for p in CONVERSIONS]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Linux-6.1.0-28-amd64-x86_64-with-glibc2.36", "linux_x86_64"),
        ("Linux-6.8.0-1012-aws-aarch64-with-glibc2.39", "linux_aarch64"),
        ("Windows-10-10.0.20348-SP0", "win_amd64"),
    ],
)
def test_the_noxfile_names_the_host_platform_as_the_environment_files_do(monkeypatch, text, expected):
    """One function names a platform, for this machine (the noxfile) and for a fingerprint (the page)."""
    monkeypatch.setattr(platform, "platform", lambda *a, **k: text)
    host_platform = _noxfile_functions("host_platform", platform_tag=platform_tag)["host_platform"]
    assert host_platform() == expected == platform_tag(text)


def test_the_noxfile_records_an_environment_with_its_platform_off_linux_x86_64():
    found = _noxfile_functions("host_platform", "records_env_name", platform_tag=platform_tag)
    name = found["records_env_name"]
    assert name("torch2", "linux_x86_64") == "torch2"  # the names the x86_64 records always had
    assert name("torch2", "linux_aarch64") == "torch2@linux_aarch64"
    assert name("torch1.8", "win_amd64") == "torch1.8@win_amd64"
    here = found["host_platform"]()  # this machine, unpatched
    assert name("torch2") == ("torch2" if here == "linux_x86_64" else f"torch2@{here}")
    if sys.platform == "linux" and platform.machine() == "x86_64":
        assert here == "linux_x86_64"


def test_the_plan_sends_cuda_runtimes_to_the_gpu_job_and_skips_default_false(tree, tmp_path):
    plan = _run_plan(tree, tmp_path)
    assert plan == _expected(tree)
    assert plan["runtimes"] == [{"runtime": "openvino", "python": "3.12"}, {"runtime": "ort1.8", "python": "3.8"}]
    assert plan["gpu_runtimes"] == ["ort-gpu"]


def test_every_needs_names_a_job_and_every_output_read_is_declared():
    jobs = _load()["jobs"]
    for name, job in jobs.items():
        needs = job.get("needs", [])
        needs = [needs] if isinstance(needs, str) else needs
        assert set(needs) <= set(jobs) - {name}, name
        for job_name, output in re.findall(r"needs\.([\w-]+)\.outputs\.([\w-]+)", json.dumps(job)):
            assert job_name in needs, f"{name} reads {job_name}'s outputs without needing it"
            assert output in jobs[job_name].get("outputs", {}), f"{name} reads {job_name}.outputs.{output}"
    assert set(jobs["replay"]["needs"]) == {"plan", "matrix", "convert"}
    assert {"matrix", "convert", "replay", "bench-gpu"} <= set(jobs["report"]["needs"])


def test_the_replay_rows_name_replay_sessions(tree, tmp_path):
    jobs, plan = _load()["jobs"], _run_plan(tree, tmp_path)
    (run,) = _steps(jobs["replay"], r"\bnox -s ")
    for row in plan["runtimes"]:
        session = _session(run, **row)
        assert REPLAY_SESSION.match(session) and row["runtime"] in session
    gpu = _gpu_sessions(tmp_path, plan["gpu_runtimes"] + ["ort-gpu2"])
    assert gpu == ["replay(runtime='ort-gpu')", "replay(runtime='ort-gpu2')"]


def test_a_session_that_changed_no_results_file_keeps_the_page_as_it_is(tmp_path):
    """The page is rendered again when a results file or the reporter's code changed, and only then: a resumed
    `nox -s matrix` with nothing left to measure skips its thirteen renders."""
    import hashlib
    import time

    root = tmp_path / "repo"
    shutil.copytree(
        ROOT / "harness" / "report", root / "harness" / "report", ignore=shutil.ignore_patterns("__pycache__")
    )
    (root / "results" / "ci-row").mkdir(parents=True)
    results = root / "results" / "torch2.jsonl"
    results.write_text('{"a": 1}\n', encoding="utf-8")
    inputs = _noxfile_functions("_page_inputs", ROOT=root, hashlib=hashlib)["_page_inputs"]
    first = inputs()
    assert inputs() == first
    (root / "results" / "ci-row" / "replay-ort1.8.jsonl").write_text("{}\n", encoding="utf-8")  # a merged CI folder
    second = inputs()
    assert second != first
    time.sleep(0.01)
    with results.open("a", encoding="utf-8") as fh:  # one more record
        fh.write('{"b": 2}\n')
    third = inputs()
    assert third != second
    (root / "harness" / "report" / "templates" / "_macros.html.j2").write_text("{# changed #}", encoding="utf-8")
    fourth = inputs()
    assert fourth != third
    (root / "results" / "notes.txt").write_text("not a results file", encoding="utf-8")
    assert inputs() == fourth


def test_every_session_the_workflow_runs_exists_in_the_noxfile(tmp_path):
    jobs, plan = _load()["jobs"], _run_plan(ROOT, tmp_path)
    (matrix_run,) = _steps(jobs["matrix"], r"\bnox -s ")
    (replay_run,) = _steps(jobs["replay"], r"\bnox -s ")
    sessions = [_session(matrix_run, **row) for row in plan["include"]]
    sessions += [_session(replay_run, **row) for row in plan["runtimes"]]
    sessions += ["bench-gpu"] + (_gpu_sessions(tmp_path, plan["gpu_runtimes"]) if plan["gpu_runtimes"] else [])
    proc = subprocess.run(
        [sys.executable, "-m", "nox", "--list", "--json", "-s", *sessions, "report"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
