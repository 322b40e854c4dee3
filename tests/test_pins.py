"""harness.host.pins: every environment file's pins exist on the package index, and a dead pin is named.

The tests marked `index` ask the real index (PyPI or pip's configured mirror) through pip; an index that
cannot be reached fails them with that reason, never passes them.
"""

from __future__ import annotations

import subprocess
from typing import Iterator, List

import pytest

from harness.errors import UserError
from harness.host.environments import PLATFORMS, Environment, MmcvSpec, load_environment
from harness.host.pins import (
    PIP_PLATFORM_TAGS,
    IndexQuery,
    IndexUnreachable,
    PackageIndex,
    check_environments,
    environment_files,
)


@pytest.fixture(scope="module")
def index() -> PackageIndex:
    return PackageIndex(timeout_s=15.0)


def _check(envs: List[Environment], index: PackageIndex) -> List[str]:
    try:
        return check_environments(envs, index)
    except IndexUnreachable as exc:
        pytest.fail(f"the package index could not be reached, so no pin was checked (an error, not a pass): {exc}")


def _env(*pins: str, python: str = "3.11", **kwargs: object) -> Environment:
    return Environment(name="dead", python=python, pins=pins, source="tests/dead.toml", **kwargs)  # type: ignore[arg-type]


# every environment file, against the real index -------------------------------------------------------------


def test_every_environment_file_has_every_pin_on_the_index_for_every_platform_it_declares(index) -> None:
    files = environment_files()
    assert any("gpu" in f.parts for f in files), "the GPU environments are checked too"
    problems = _check([load_environment(f) for f in files], index)
    assert problems == [], "pins the index has no file for:\n" + "\n".join(problems)


# a dead pin is named, with the versions that do exist ---------------------------------------------------------


def test_a_pin_the_index_lacks_is_named_with_the_versions_nearest_to_it(index) -> None:
    problems = _check([_env("onnxruntime==1.10.0", "numpy==2.4.6")], index)
    assert len(problems) == 1, problems
    line = problems[0]
    assert line.startswith("tests/dead.toml: onnxruntime==1.10.0 has no wheel for Python 3.11 on linux_x86_64")
    assert "the index has 1.15.0 ... " in line and "nearest: 1.15.0" in line  # the first release with cp311 wheels


def test_the_gpu_pin_that_could_not_provision_is_named(index) -> None:
    problems = _check([_env("onnxruntime-gpu==1.10.0", python="3.8")], index)
    assert len(problems) == 1 and "onnxruntime-gpu==1.10.0 has no wheel for Python 3.8" in problems[0]
    assert "the index has 1.11.0 ... " in problems[0] and "nearest: 1.11.0" in problems[0]


def test_a_made_up_version_is_named_with_the_newest_below_it(index) -> None:
    problems = _check([_env("onnx==1.23.999")], index)
    assert len(problems) == 1 and "onnx==1.23.999 has no wheel" in problems[0]
    assert "nearest: 1.23.2" in problems[0]


def test_each_declared_platform_is_checked_on_its_own(index) -> None:
    env = _env("onnxruntime-gpu==1.31.1", platforms=("linux_x86_64", "linux_aarch64"))
    problems = _check([env], index)
    assert len(problems) == 1 and "on linux_aarch64" in problems[0], problems
    assert "has no wheel of onnxruntime-gpu for it at all" in problems[0]


def test_mmcv_may_be_an_sdist_but_nothing_else_may(index) -> None:
    # PyPI has only mmcv-full's sdist: fine as the [mmcv] spec the project builds, a defect as a plain pin
    built = _env("numpy==1.23.5", python="3.8", mmcv=MmcvSpec("mmcv-full==1.7.2", runtime=("addict==2.4.0",)))
    plain = _env("mmcv-full==1.7.2", python="3.8")
    problems = _check([built, plain], index)
    assert len(problems) == 1 and problems[0].startswith("tests/dead.toml: mmcv-full==1.7.2 has no wheel for"), problems


# an index that does not answer is an error -------------------------------------------------------------------


def test_an_index_that_refuses_connections_is_an_error_not_a_pass() -> None:
    dead = PackageIndex(index_url="http://127.0.0.1:9/simple", timeout_s=3.0)
    with pytest.raises(IndexUnreachable, match="no index answered|could not fetch"):
        check_environments([_env("onnx==1.23.2")], dead)


class _FakePip:
    """Stands in for pip: answers every question with `output`, and records the command lines."""

    def __init__(self, output: str = "", timeout: bool = False) -> None:
        self.output = output
        self.timeout = timeout
        self.commands: List[List[str]] = []

    def __call__(self, cmd: List[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        self.commands.append(cmd)
        if self.timeout:
            raise subprocess.TimeoutExpired(cmd, 90.0)
        return subprocess.CompletedProcess(cmd, 1, "", self.output)


def _refusal(name: str, versions: str) -> str:
    return f"ERROR: Could not find a version that satisfies the requirement {name}<0 (from versions: {versions})\n"


def test_a_connection_error_in_pips_log_is_an_error() -> None:
    failed = "Could not fetch URL https://pypi.org/simple/onnx/: connection error: Max retries exceeded - skipping\n"
    pip = _FakePip(failed + _refusal("onnx", "none"))
    with pytest.raises(IndexUnreachable, match="could not fetch https://pypi.org/simple/onnx/"):
        PackageIndex(runner=pip).versions(IndexQuery("onnx", "3.11", "linux_x86_64"))


def test_a_404_is_an_answer_and_an_empty_index_is_an_error() -> None:
    missing = "Could not fetch URL https://pypi.org/simple/nothing/: 404 Client Error: Not Found - skipping\n"
    pip = _FakePip(missing + _refusal("nothing", "none"))
    with pytest.raises(IndexUnreachable, match="lists no version of pip itself"):
        check_environments([_env("nothing==1.0")], PackageIndex(runner=pip))


def test_pip_that_never_answers_is_an_error() -> None:
    with pytest.raises(IndexUnreachable, match="did not answer within 90 s"):
        PackageIndex(runner=_FakePip(timeout=True)).versions(IndexQuery("onnx", "3.11", "linux_x86_64"))


def test_answers_are_cached_and_the_command_asks_for_wheels_that_fit() -> None:
    pip = _FakePip(_refusal("x", "1.0, 1.1, 2.0rc1"))
    problems = check_environments([_env("x==1.1", "x==1.1"), _env("x==1.1")], PackageIndex(runner=pip))
    assert problems == []
    assert len(pip.commands) == 2  # x once for (3.11, linux_x86_64), and the reachability probe
    asked = next(cmd for cmd in pip.commands if cmd[-1] == "x<0")
    assert asked[asked.index("--only-binary") + 1] == ":all:" and asked[asked.index("--python-version") + 1] == "3.11"
    platforms = [asked[i + 1] for i, arg in enumerate(asked) if arg == "--platform"]
    assert {"manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"} <= set(platforms)
    assert "manylinux_2_29_x86_64" not in platforms and "--dry-run" in asked


# the platforms field ------------------------------------------------------------------------------------------


@pytest.fixture()
def env_file(tmp_path) -> Iterator:
    def write(extra: str):
        path = tmp_path / "e.toml"
        path.write_text(f'name = "e"\npython = "3.11"\npins = ["onnx==1.23.2"]\n{extra}\n')
        return path

    yield write


def test_platforms_default_to_linux_x86_64_and_parse_as_a_tuple(env_file) -> None:
    assert load_environment(env_file("")).platforms == ("linux_x86_64",)
    declared = load_environment(env_file('platforms = ["linux_x86_64", "win_amd64", "linux_aarch64"]'))
    assert declared.platforms == ("linux_x86_64", "win_amd64", "linux_aarch64")


@pytest.mark.parametrize("value", ['["macos_arm64"]', '"win_amd64"', "[]"])
def test_an_unknown_platform_is_a_one_line_user_error_naming_the_fix(env_file, value) -> None:
    with pytest.raises(UserError) as caught:
        load_environment(env_file(f"platforms = {value}"))
    message = str(caught.value)
    assert "\n" not in message and "platforms" in message
    assert 'like platforms = ["linux_x86_64"]' in message and "win_amd64, linux_aarch64" in message


def test_every_platform_maps_to_pip_tags() -> None:
    assert set(PIP_PLATFORM_TAGS) == set(PLATFORMS)
    assert PIP_PLATFORM_TAGS["win_amd64"] == ("win_amd64",)
    assert "manylinux2014_aarch64" in PIP_PLATFORM_TAGS["linux_aarch64"]
