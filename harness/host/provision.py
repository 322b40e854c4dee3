"""Build an environment's virtualenv once per set of pins, and mmcv once per (mmcv, torch, Python) key.

Host side only (the noxfile calls it). Venvs and mmcv wheels live in the cache folder outside the
repository ($ONNX_COMPAT_CACHE, default ~/.cache/onnx-compat-matrix), so clean clones and CI reuse them.
"""

from __future__ import annotations

import glob
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence

from harness.errors import UserError
from harness.host.environments import Environment, cache_dir
from harness.record import parse_version

Log = Callable[[str], None]


WINDOWS = sys.platform == "win32"


def venv_bin(venv: Path) -> Path:
    """A virtualenv's scripts folder: bin/, or Scripts\\ on Windows."""
    return venv / ("Scripts" if WINDOWS else "bin")


def venv_python(venv: Path) -> Path:
    return venv_bin(venv) / ("python.exe" if WINDOWS else "python")


def interpreter_patterns(
    version: str, windows: bool = WINDOWS, environ: Optional[Mapping[str, str]] = None, machine: str = ""
) -> List[str]:
    """Globs where an interpreter for `version` lives, best first: pyenv (pyenv-win), then the tool cache that
    GitHub's setup-python installs into ($RUNNER_TOOL_CACHE/Python/<version>/<arch>/)."""
    environ = os.environ if environ is None else environ
    machine = machine or platform.machine()
    patterns = []
    root = environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    if windows:
        patterns.append(
            os.path.join(
                environ.get("PYENV") or os.path.join(root, "pyenv-win"), "versions", version + ".*", "python.exe"
            )
        )
    else:
        patterns.append(os.path.join(root, "versions", version + ".*", "bin", "python" + version))
    tool_cache = environ.get("RUNNER_TOOL_CACHE") or environ.get("AGENT_TOOLSDIRECTORY")
    if tool_cache:  # this machine's architecture only: windows-2022 keeps x86 builds beside the x64 ones
        inside = ["python.exe"] if windows else ["bin", "python" + version]
        patterns.append(os.path.join(tool_cache, "Python", version + ".*", _tool_cache_arch(machine), *inside))
    return patterns


def _tool_cache_arch(machine: str) -> str:
    """setup-python's folder name for an architecture: x64, arm64."""
    machine = machine.lower()
    return {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(machine, machine)


def find_python(version: str) -> str:
    """An interpreter for `version` ("3.8"): pyenv's, the CI tool cache's, uv's, the py launcher's, then PATH's."""
    candidates = [
        exe
        for pattern in interpreter_patterns(version)
        for exe in sorted(glob.glob(pattern), key=lambda path: _patch_level(path, version), reverse=True)
    ]
    uv = shutil.which("uv")
    if uv:
        found = _run_quiet([uv, "python", "find", "--no-python-downloads", version])
        if found:
            candidates.append(found)
    if WINDOWS and shutil.which("py"):
        found = _run_quiet(["py", "-" + version, "-c", "import sys; print(sys.executable)"])
        if found:
            candidates.append(found)
    for name in ("python" + version, "python3", "python"):
        on_path = shutil.which(name)
        if on_path:
            candidates.append(on_path)
    for exe in candidates:  # of that version, and 64-bit: no torch wheel is built for a 32-bit interpreter
        if _run_quiet([exe, "-c", _PROBE]) == f"{version} 64":
            return exe
    where = "pyenv, $RUNNER_TOOL_CACHE, uv, " + ("the py launcher, " if WINDOWS else "") + "PATH"
    raise UserError(
        f"no Python {version} interpreter found (looked in {where}); "
        f"install it with `pyenv install {version}` or `uv python install {version}`"
    )


_PROBE = "import struct, sys; print('%d.%d' % sys.version_info[:2], struct.calcsize('P') * 8)"


def _patch_level(path: str, version: str) -> int:
    """3.8.18's 18, from the folder named after the full version in an interpreter's path; -1 if none is."""
    for part in Path(path).parts:
        if part.startswith(version + "."):
            try:
                return int(part[len(version) + 1 :].split(".")[0].split("-")[0])
            except ValueError:
                return -1
    return -1


def _run_quiet(cmd: Sequence[str]) -> Optional[str]:
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def python_version_of(exe: str) -> str:
    return _run_quiet([exe, "-c", "import platform; print(platform.python_version())"]) or "?"


class Provisioner:
    """Creates or reuses the venv of one environment; installs mmcv from the wheel cache or builds it.

    `venv(build_mmcv=False)` leaves an mmcv that is not in the wheel cache for later (`install_mmcv`): the
    noxfile runs the cells that need no mmcv, and renders the page, before the compiler takes the cores.
    """

    def __init__(self, env: Environment, log: Log = print, extra: Sequence[str] = ()) -> None:
        self.env = env
        self.log = log
        self.extra = tuple(extra)
        self.cache = cache_dir()

    def venv(self, build_mmcv: bool = True) -> Path:
        venv = self._pinned_venv()
        if self.env.mmcv and not self.mmcv_settled(venv) and (build_mmcv or self.mmcv_cached(venv)):
            self.install_mmcv(venv)
        return venv

    def _pinned_venv(self) -> Path:
        """The venv with every pin (mmcv's runtime pins too, in one resolve), mmcv itself aside."""
        exe = find_python(self.env.python)
        full = python_version_of(exe)
        venv = self.cache / "venvs" / f"{self.env.name}-{self.env.venv_hash(full, self.extra)}"
        stamp = venv / "pins.ok"
        if stamp.exists():
            self.log(f"{self.env.name}: reusing {venv} (pins unchanged)")
            return venv
        if venv.exists():
            shutil.rmtree(venv)
        self.log(f"{self.env.name}: creating {venv} with Python {full} ({exe})")
        start = time.monotonic()
        self._check([exe, "-m", "venv", str(venv)])
        pip = [str(venv_python(venv)), "-m", "pip", "--disable-pip-version-check"]
        index = [a for url in self.env.extra_index_urls for a in ("--extra-index-url", url)]
        # one resolve for every pin: installing mmcv's runtime pins after the extras would move a shared
        # dependency (packaging) under the test tools and print a resolver conflict
        runtime = list(self.env.mmcv.runtime) if self.env.mmcv else []
        # the pins are exact and the pins check proves them on the index: a machine's constraint file (one
        # capping torch below the newest release, say) has nothing to add but a refusal
        self._check(
            pip + ["install", "-q"] + index + list(self.env.pins) + runtime + list(self.extra),
            env=dict(os.environ, PIP_CONSTRAINT=os.devnull),
        )
        stamp.write_text("\n".join(self.env.pins) + "\n")
        self.log(f"{self.env.name}: pins installed in {time.monotonic() - start:.0f} s")
        return venv

    def _check(self, cmd: List[str], **kwargs: object) -> None:
        result = subprocess.run(cmd, **kwargs)  # type: ignore[call-overload]
        if result.returncode != 0:
            raise UserError(
                f"{self.env.name}: `{' '.join(cmd[:6])} ...` failed (exit {result.returncode}); "
                f"see the output above; check the pins in {self.env.source}"
            )

    # mmcv ---------------------------------------------------------------------------------------------

    def mmcv_key(self, venv: Path) -> str:
        torch_version = self.env.pin("torch") or "unknown"
        py = _run_quiet([str(venv_python(venv)), "-c", "import sys; print('%d%d' % sys.version_info[:2])"])
        return f"{self.env.mmcv.package}-{self.env.mmcv.version}_torch-{torch_version}_cp{py}_cpu"

    def unavailable_file(self, venv: Path) -> Path:
        return venv / "mmcv-unavailable.txt"

    def mmcv_settled(self, venv: Path) -> bool:
        """mmcv is installed in the venv, or known not to build (its reason written beside the venv)."""
        if self.unavailable_file(venv).exists():
            return True
        code = "import importlib.metadata as m, sys; sys.exit(not any(d.metadata['Name'] in ('mmcv', 'mmcv-full') "
        code += "for d in m.distributions()))"
        return subprocess.run([str(venv_python(venv)), "-c", code]).returncode == 0

    def mmcv_cached(self, venv: Path) -> bool:
        """Its wheel is in the cache already (installing it takes seconds)."""
        wheels = self.cache / "wheels" / self.mmcv_key(venv)
        return wheels.is_dir() and any(wheels.glob("*.whl"))

    def install_mmcv(self, venv: Path) -> None:
        """mmcv from the wheel cache, or built (minutes of the compiler on every core); a failure is written beside
        the venv as the reason its cells are not applicable."""
        pip = [str(venv_python(venv)), "-m", "pip", "--disable-pip-version-check"]
        mmcv = self.env.mmcv
        key = self.mmcv_key(venv)
        wheels = self.cache / "wheels" / key
        failed = self.cache / "wheels" / (key + ".failed")
        log_path = self.cache / "logs" / (key + ".log")
        self.unavailable_file(venv).unlink(missing_ok=True)
        found = sorted(wheels.glob("*.whl")) if wheels.is_dir() else []
        if found:
            self.log(f"{self.env.name}: mmcv cache hit: {found[0]}")
        elif failed.exists():
            said = failed.read_text().strip()
            self._mark_unavailable(
                venv, f"{mmcv.spec} failed to build before ({said}; log: {log_path}); delete {failed} to try again"
            )
            return
        else:
            found = self._build_mmcv(venv, pip, key, wheels, log_path, failed)
            if not found:
                return
        self._check(pip + ["install", "-q", "--no-deps", str(found[0])])
        probe = subprocess.run(
            [str(venv_python(venv)), "-c", "from mmcv.ops.point_sample import bilinear_grid_sample"],
            capture_output=True,
            text=True,
        )
        if probe.returncode != 0:
            last = (probe.stderr.strip().splitlines() or ["?"])[-1]
            self._mark_unavailable(
                venv,
                f"{mmcv.spec} installed from {found[0]} but mmcv.ops.point_sample does "
                f"not import ({last}); rebuild by deleting that folder",
            )

    def _build_mmcv(
        self, venv: Path, pip: List[str], key: str, wheels: Path, log_path: Path, failed: Path
    ) -> List[Path]:
        mmcv = self.env.mmcv
        log_path.parent.mkdir(parents=True, exist_ok=True)
        failed.parent.mkdir(parents=True, exist_ok=True)
        self.log(
            f"{self.env.name}: mmcv cache miss: building {mmcv.spec} with CPU ops (6-20 min on 2 cores), log {log_path}"
        )
        start = time.monotonic()
        if mmcv.build:
            self._check(pip + ["install", "-q", "--no-deps"] + list(mmcv.build))
        environ = dict(os.environ, MMCV_WITH_OPS="1", FORCE_CUDA="0", MAX_JOBS=str(os.cpu_count() or 2))
        if WINDOWS:
            environ.update(msvc_build_environment(environ, self.env.pin("torch")))
        else:
            environ.update(gnu_build_environment(environ, self.env.pin("torch"), self.cache / "tools"))
        with tempfile.TemporaryDirectory() as tmp, open(log_path, "w") as log:
            result = subprocess.run(
                pip + ["wheel", "--no-cache-dir", "--no-deps", "--no-build-isolation", mmcv.spec, "-w", tmp],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=environ,
            )
            built = sorted(Path(tmp).glob("*.whl"))
            if result.returncode != 0 or not built:
                said = first_build_error(log_path)
                failed.write_text(f"exit {result.returncode}" + (f": {said}" if said else "") + "\n")
                self._mark_unavailable(
                    venv,
                    f"{mmcv.spec} failed to build (exit {result.returncode}{': ' + said if said else ''}); "
                    f"log: {log_path}",
                )
                return []
            if built[0].name.endswith("none-any.whl"):
                failed.write_text("built without compiled ops\n")
                self._mark_unavailable(venv, f"{mmcv.spec} built without its compiled ops; log: {log_path}")
                return []
            wheels.mkdir(parents=True, exist_ok=True)
            target = wheels / built[0].name
            shutil.move(str(built[0]), str(target))
        self.log(f"{self.env.name}: built {target.name} in {time.monotonic() - start:.0f} s, cached under {wheels}")
        return [target]

    def _mark_unavailable(self, venv: Path, reason: str) -> None:
        self.log(f"{self.env.name}: mmcv unavailable: {reason}")
        self.unavailable_file(venv).write_text(reason)

    def mmcv_unavailable_reason(self, venv: Path) -> Optional[str]:
        path = self.unavailable_file(venv)
        return path.read_text().strip() if path.exists() else None


def first_build_error(log_path: Path) -> str:
    """The compiler's (or setup.py's) first error in a build log, its file named without the folders: what a
    user reads first ("ATen.h:9:2: error: #error C++20 or later compatible compiler is required to use ATen.")."""
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    for line in lines:
        text = line.strip()
        if re.search(r"(^|: )(fatal )?error[: ]", text) and "subprocess-exited-with-error" not in text:
            head, _, rest = text.partition(": ")
            return (os.path.basename(head) + ": " + rest if rest else text)[:240]
    return ""


# torch 2.15's headers need C++20 ("#error C++20 or later compatible compiler is required to use ATen"); torch's
# own extension builds ask for it, but mmcv 2.2.0's setup.py passes -std=c++17 itself.
CXX20_FROM_TORCH = (2, 15)


def gnu_build_environment(environ: Mapping[str, str], torch_version: Optional[str], tools: Path) -> Dict[str, str]:
    """What a C++ extension build with gcc or clang needs: for torch 2.15+, CXX is a wrapper that adds -std=c++20
    after the command line's own flags (the last -std wins), as `_CL_` does for MSVC."""
    if not torch_version or parse_version(torch_version) < CXX20_FROM_TORCH:
        return {}
    wrapper = tools / "cxx-std20"
    compiler = environ.get("CXX") or "c++"
    compiler = "c++" if compiler == str(wrapper) else compiler
    tools.mkdir(parents=True, exist_ok=True)
    text = "#!/bin/sh\n# the C++ compiler, C++20 whatever the build asked (torch 2.15's headers)\n"
    text += f'exec {compiler} "$@" -std=c++20\n'
    if not wrapper.exists() or wrapper.read_text() != text:
        wrapper.write_text(text)
        wrapper.chmod(0o755)
    return {"CXX": str(wrapper)}


def msvc_build_environment(environ: Mapping[str, str], torch_version: Optional[str]) -> Dict[str, str]:
    """What a C++ extension build with MSVC needs on top of an activated Developer environment (Windows).

    - MSVC's own folder first on PATH: under Git Bash, GNU coreutils' `link` comes earlier and distutils, told to
      use the environment as it is (DISTUTILS_USE_SDK), would link with it.
    - torch 2.13's headers need C++20, while mmcv asks MSVC for C++17: `_CL_` options come after the command line's,
      so /std:c++20 wins.
    """
    changes: Dict[str, str] = {}
    cl = shutil.which("cl", path=environ.get("PATH"))
    if cl:
        changes["PATH"] = os.pathsep.join([os.path.dirname(cl), environ.get("PATH", "")])
    if torch_version and parse_version(torch_version) >= (2, 13):
        changes["_CL_"] = " ".join(filter(None, [environ.get("_CL_"), "/std:c++20"]))
    return changes


def link_into_repo(venv: Path, repo: Path, name: str) -> None:
    """A `.nox/<name>` link to the cached venv, where tools (and people) look for session venvs."""
    link = repo / ".nox" / name
    link.parent.mkdir(exist_ok=True)
    if link.is_symlink() or link.exists():
        if link.is_symlink() and link.resolve() == venv.resolve():
            return
        if link.is_symlink():
            link.unlink()
        else:
            shutil.rmtree(link)
    try:
        link.symlink_to(venv, target_is_directory=True)
    except OSError:  # Windows without the symlink privilege: a convenience only, the venv is used where it is
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use the noxfile")
