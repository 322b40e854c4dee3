"""Environments as data, interpreters found where pyenv's shims fail, and an mmcv build that fails cleanly."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest
from conftest import ROOT

from harness.errors import UserError
from harness.host.environments import Environment, MmcvSpec, load_environment, load_environments
from harness.host.provision import Provisioner, find_python, interpreter_patterns, venv_python


def test_the_default_environments_load_with_exact_pins():
    envs = {e.name: e for e in load_environments(ROOT / "environments")}
    assert {"torch1.8", "torch1.12", "torch2"} <= set(envs)
    assert envs["torch1.8"].python == "3.8" and envs["torch1.8"].pin("torch") == "1.8.1"
    assert envs["torch1.12"].pin("torch") == "1.12.1" and envs["torch2"].pin("onnxscript")
    for env in envs.values():
        assert all("==" in pin for pin in env.pins)
    gpu = load_environments(ROOT / "environments" / "gpu", device="cuda")
    assert gpu and all(e.device == "cuda" for e in gpu)


def test_a_loose_pin_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\npython = "3.11"\npins = ["torch>=2"]\n')
    with pytest.raises(UserError, match="package==version"):
        load_environment(path)
    path.write_text('name = "bad"\npins = []\n')
    with pytest.raises(UserError, match="missing key 'python'"):
        load_environment(path)


def test_a_runtime_file_names_the_case_tags_it_leaves_out(tmp_path):
    envs = {e.name: e for e in load_environments(ROOT / "environments" / "runtimes")}
    assert envs["ort1.16"].skip_tags == ("bench",) and envs["ort1.32"].skip_tags == ()
    path = tmp_path / "r.toml"
    path.write_text(
        'name = "r"\nruntime = "onnxruntime"\npython = "3.11"\npins = ["onnxruntime==1.32.0"]\nskip_tags = "bench"\n'
    )
    with pytest.raises(UserError, match=r'skip_tags = .bench.; write a list of case tags, like \["bench"\]'):
        load_environment(path)


def test_venv_hash_changes_with_the_pins_only():
    a = Environment("e", "3.11", ("x==1",))
    assert a.venv_hash("3.11.7") == Environment("e", "3.11", ("x==1",)).venv_hash("3.11.7")
    assert a.venv_hash("3.11.7") != Environment("e", "3.11", ("x==2",)).venv_hash("3.11.7")


def test_find_python_returns_a_working_interpreter_of_that_version():
    version = "{}.{}".format(*sys.version_info[:2])
    exe = find_python(version)
    out = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    assert out.stdout.strip() == str(sys.version_info[:2])


def test_find_python_finds_the_ci_tool_cache_newest_patch_first(tmp_path, monkeypatch):
    """GitHub's setup-python leaves interpreters under $RUNNER_TOOL_CACHE/Python/<full version>/<arch>/, where
    PATH holds only the last one set up: an environment on another Python must be found there."""
    version = "{}.{}".format(*sys.version_info[:2])
    arch = {"x86_64": "x64", "aarch64": "arm64"}[platform.machine()]
    for patch, folder_arch in (("1", arch), ("12", arch), ("13", "x86")):  # 13: another architecture's, left alone
        folder = tmp_path / "cache" / "Python" / f"{version}.{patch}" / folder_arch / "bin"
        folder.mkdir(parents=True)
        (folder / f"python{version}").symlink_to(sys.executable)
    monkeypatch.setenv("RUNNER_TOOL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no uv, no python on PATH: the tool cache alone
    newest = tmp_path / "cache" / "Python" / f"{version}.12" / arch / "bin" / f"python{version}"
    assert find_python(version) == str(newest)


def test_on_windows_interpreters_are_looked_for_in_pyenv_win_and_the_tool_cache():
    environ = {"PYENV_ROOT": r"C:\Users\me\.pyenv", "RUNNER_TOOL_CACHE": r"C:\hostedtoolcache\windows"}
    found = interpreter_patterns("3.8", windows=True, environ=environ, machine="AMD64")
    patterns = [p.replace("/", "\\") for p in found]
    assert patterns == [
        r"C:\Users\me\.pyenv\pyenv-win\versions\3.8.*\python.exe",
        r"C:\hostedtoolcache\windows\Python\3.8.*\x64\python.exe",  # not the x86 builds beside them
    ]


def test_a_venvs_interpreter_is_where_venv_puts_it(tmp_path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "v")], check=True)
    assert subprocess.run([str(venv_python(tmp_path / "v")), "-c", "pass"]).returncode == 0


def test_a_windows_mmcv_build_links_with_msvc_and_compiles_torch_2_13_headers_as_cpp20(tmp_path):
    from harness.host.provision import msvc_build_environment

    msvc, git = tmp_path / "msvc", tmp_path / "git-usr-bin"
    for folder, tool in ((msvc, "cl"), (git, "link")):
        folder.mkdir()
        (folder / tool).write_text("")
        (folder / tool).chmod(0o755)
    path = os.pathsep.join([str(git), str(msvc)])  # Git Bash: GNU's link before MSVC's
    env = msvc_build_environment({"PATH": path}, "2.13.0")
    assert env["PATH"].split(os.pathsep)[:2] == [str(msvc), str(git)] and env["_CL_"] == "/std:c++20"
    assert msvc_build_environment({"PATH": path, "_CL_": "/W3"}, "2.13.0")["_CL_"] == "/W3 /std:c++20"
    assert msvc_build_environment({"PATH": str(git)}, "1.8.1") == {}  # no cl, torch 1.8: nothing to change


def test_an_mmcv_build_against_torch_2_15_compiles_as_cpp20_whatever_its_setup_asks(tmp_path):
    """mmcv 2.2.0's setup.py passes -std=c++17, and torch 2.15's headers need C++20: the wrapper's flag comes last."""
    from harness.host.provision import gnu_build_environment

    assert gnu_build_environment({}, "2.13.0", tmp_path) == {}  # its headers build as C++17
    env = gnu_build_environment({}, "2.15.0", tmp_path)
    source = tmp_path / "spaceship.cpp"
    source.write_text("#include <compare>\nint main() { return (1 <=> 2) < 0 ? 0 : 1; }\n")
    built = subprocess.run([env["CXX"], "-std=c++17", str(source), "-o", str(tmp_path / "a")], capture_output=True)
    assert built.returncode == 0, built.stderr.decode()
    plain = subprocess.run(["c++", "-std=c++17", str(source), "-o", str(tmp_path / "b")], capture_output=True)
    assert plain.returncode != 0  # C++17 has no <=>: the wrapper is what makes it build
    assert gnu_build_environment(env, "2.15.0", tmp_path) == env  # its own CXX is not wrapped twice


def test_a_missing_interpreter_names_the_install_command():
    with pytest.raises(UserError, match=r"pyenv install 3\.2"):
        find_python("3.2")


@pytest.fixture
def unbuildable(tmp_path, monkeypatch):
    """An environment of this Python whose mmcv cannot build (no such release), in a cache of its own."""
    monkeypatch.setenv("ONNX_COMPAT_CACHE", str(tmp_path))
    version = "{}.{}".format(*sys.version_info[:2])
    return Environment("tiny", version, ("six==1.16.0",), mmcv=MmcvSpec("mmcv-full==0.0.1"), source="test")


def test_a_failed_mmcv_build_leaves_the_environment_usable(tmp_path, unbuildable):
    env = unbuildable
    lines = []
    prov = Provisioner(env, log=lines.append)
    venv = prov.venv()
    reason = prov.mmcv_unavailable_reason(venv)
    assert reason and "failed to build" in reason and "log:" in reason
    assert (tmp_path / "wheels").glob("*.failed")
    assert any("mmcv cache miss" in line for line in lines)
    again = Provisioner(env, log=lines.append)
    assert again.venv() == venv and "reusing" in lines[-1]
    assert again.mmcv_unavailable_reason(venv) == reason


def test_an_mmcv_not_in_the_wheel_cache_is_left_for_later_and_built_on_request(unbuildable):
    """The matrix runs an environment's other cells before the compiler takes the cores (noxfile._run_matrix)."""
    env = unbuildable
    lines = []
    prov = Provisioner(env, log=lines.append)
    venv = prov.venv(build_mmcv=False)
    assert not prov.mmcv_cached(venv) and not prov.mmcv_settled(venv)
    assert prov.mmcv_unavailable_reason(venv) is None and not any("mmcv cache" in line for line in lines)
    prov.install_mmcv(venv)
    assert any("mmcv cache miss" in line for line in lines)
    assert prov.mmcv_settled(venv) and "failed to build" in prov.mmcv_unavailable_reason(venv)
    again = Provisioner(env, log=lines.append)
    assert again.venv(build_mmcv=False) == venv and again.mmcv_settled(venv)  # known not to build: not tried again


def test_a_failed_builds_reason_is_the_compilers_first_error_without_its_folders(tmp_path):
    from harness.host.provision import first_build_error

    log = tmp_path / "build.log"
    log.write_text(
        "  error: subprocess-exited-with-error\n"
        "      /venv/site-packages/torch/include/ATen/ATen.h:9:2: error: #error C++20 or later compatible"
        " compiler is required to use ATen.\n"
        "      /tmp/x/intrusive_ptr.h:775:27: error: 'strong_ordering' in namespace 'std' does not name a type\n"
    )
    assert first_build_error(log) == (
        "ATen.h:9:2: error: #error C++20 or later compatible compiler is required to use ATen."
    )
    log.write_text("warning: nothing wrong\n")
    assert first_build_error(log) == "" and first_build_error(tmp_path / "absent.log") == ""
