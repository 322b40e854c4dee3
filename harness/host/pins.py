"""Every pin of an environment must exist on the package index for its Python and platforms; this says which don't.

A pin that no machine can install is a defect even where no test machine runs it (GPU, Windows, ARM64), so the
check asks the index instead of installing: pip's own finder, through its command line, for `NAME<0` in a dry
run. Nothing can satisfy `<0`, so pip never downloads a file; its refusal lists every version it found with a
file that fits the Python version, the platform tags and --only-binary, which `pip index versions` does not
honour. Only what every machine reaches counts: pip's index URL (PyPI or the mirror that pip is configured
with) and the environment's own extra_index_urls, never a machine's find-links folders, extra indexes or
constraint files. Host side only (Python 3.11).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from harness.errors import UserError
from harness.host.environments import ENV_DIR, Environment, load_environment

# A Linux machine takes manylinux wheels up to its own glibc. 2.28 (RHEL 8, maintained to 2029) is the oldest
# glibc of a maintained distribution, and torch >= 2.7 and onnxruntime-gpu >= 1.17 ship only manylinux_2_28
# wheels; a pin with wheels only for a newer glibc is reported.
GLIBC_CEILING = 28


def _linux_tags(arch: str) -> Tuple[str, ...]:
    # pip 23 does not widen manylinux_2_X to older glibc by itself: every tag a machine accepts is named
    perennial = [f"manylinux_2_{minor}_{arch}" for minor in range(GLIBC_CEILING, 4, -1)]
    legacy = [f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}", f"linux_{arch}"]
    return tuple(perennial + legacy)


PIP_PLATFORM_TAGS: Dict[str, Tuple[str, ...]] = {
    "linux_x86_64": _linux_tags("x86_64"),
    "win_amd64": ("win_amd64",),
    "linux_aarch64": _linux_tags("aarch64"),
}
PLATFORM_LABELS = {
    "linux_x86_64": f"linux_x86_64 (manylinux, glibc <= 2.{GLIBC_CEILING})",
    "win_amd64": "win_amd64",
    "linux_aarch64": f"linux_aarch64 (manylinux, glibc <= 2.{GLIBC_CEILING})",
}

# Whitespace empties a list option that pip.conf or the environment sets (pip splits the value).
_PIP_OVERRIDES = {
    "PIP_FIND_LINKS": " ",
    "PIP_EXTRA_INDEX_URL": " ",
    "PIP_CONSTRAINT": " ",
    "PIP_USER": "false",
    "PIP_REQUIRE_VIRTUALENV": "false",
    "PIP_NO_INPUT": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
}
_VERSIONS = re.compile(r"\(from versions: (.*)\)")
_FETCH_FAILED = re.compile(r"Could not fetch URL (\S+): (.*?) - skipping")
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*==\s*([^\s;]+)")

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


class IndexUnreachable(UserError):
    """The index did not answer: the check cannot say anything, which is an error and never a pass."""


@dataclass(frozen=True)
class Requirement:
    """One exact pin of an environment file; `sdist_ok` only for what the project builds itself (mmcv)."""

    name: str
    version: str
    sdist_ok: bool = False
    where: str = "pins"


@dataclass(frozen=True)
class IndexQuery:
    """One question to the index; its answer holds for every pin of that package in the run."""

    name: str
    python: str
    platform: str
    sdist_ok: bool = False
    extra_index_urls: Tuple[str, ...] = ()


def requirements_of(env: Environment) -> List[Requirement]:
    found = [_requirement(env, pin, "pins", sdist_ok=False) for pin in env.pins]
    if env.mmcv:
        # mmcv's prebuilt wheels live on OpenMMLab's own site: the project builds mmcv from PyPI's sdist
        found.append(_requirement(env, env.mmcv.spec, "[mmcv] spec", sdist_ok=True))
        found += [_requirement(env, pin, "[mmcv] runtime", sdist_ok=False) for pin in env.mmcv.runtime]
        found += [_requirement(env, pin, "[mmcv] build", sdist_ok=False) for pin in env.mmcv.build]
    return found


def _requirement(env: Environment, pin: str, where: str, sdist_ok: bool) -> Requirement:
    match = _PIN.match(pin)
    if not match:
        raise UserError(f"{_shown(env)}: {where} entry {pin!r} is not exact; write it as package==version")
    return Requirement(match.group(1), match.group(2), sdist_ok, where)


class PackageIndex:
    """Asks pip which versions of a package the index has for one Python and platform, once per question."""

    def __init__(
        self,
        index_url: Optional[str] = None,
        timeout_s: float = 15.0,
        workers: int = 4,
        runner: Runner = subprocess.run,
    ) -> None:
        self.index_url = index_url
        self.timeout_s = timeout_s
        self.workers = workers
        self.runner = runner
        self._answers: Dict[IndexQuery, Tuple[str, ...]] = {}
        self._probed = False

    def fetch(self, queries: Iterable[IndexQuery], verbose: bool = False) -> None:
        """Answers the questions, a few at a time (each is one pip process, mostly waiting on the network).

        `verbose` asks again even where answered, with pip's debug log, which names every index page it could
        not fetch: a pin is called missing only after that shows every index answered.
        """
        todo = list(dict.fromkeys(q for q in queries if verbose or q not in self._answers))
        probe = None
        if todo and not self._probed:
            # pip ships a pure-Python wheel for every Python: no version of it means no index answered at all
            probe = IndexQuery("pip", todo[0].python, todo[0].platform, False, todo[0].extra_index_urls)
        answers = self._ask_all(list(dict.fromkeys(todo + [probe] if probe else todo)), verbose)
        if probe is not None and not answers[probe]:
            where = self.index_url or "the index URL in `pip config list`"
            raise IndexUnreachable(f"no index answered: {where} lists no version of pip itself; check the network")
        self._probed = self._probed or probe is not None
        self._answers.update(answers)

    def _ask_all(self, queries: List[IndexQuery], verbose: bool) -> Dict[IndexQuery, Tuple[str, ...]]:
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            futures = {query: pool.submit(self._ask, query, verbose) for query in queries}
            try:
                return {query: future.result() for query, future in futures.items()}
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise

    def versions(self, query: IndexQuery) -> Tuple[str, ...]:
        if query not in self._answers:
            self.fetch([query])
        return self._answers[query]

    def _ask(self, query: IndexQuery, verbose: bool = False) -> Tuple[str, ...]:
        with tempfile.TemporaryDirectory(prefix="pins-") as target:
            cmd = self.command(query, target, verbose)
            try:
                result = self.runner(
                    cmd, capture_output=True, text=True, timeout=self.timeout_s * 4 + 30, env=_pip_environ()
                )
            except subprocess.TimeoutExpired as exc:
                raise IndexUnreachable(
                    f"pip did not answer within {exc.timeout:.0f} s asking the index for {query.name}; "
                    "check the network and `pip config list`"
                ) from exc
        return _parse_answer(query, result.stdout + result.stderr, result.returncode)

    def command(self, query: IndexQuery, target: str, verbose: bool = False) -> List[str]:
        """The pip command line for one question."""
        cmd = _pip() + ["install", "--dry-run", "--no-deps", "--ignore-installed", "--target", target]
        cmd += ["-vv"] if verbose else []
        cmd += ["--timeout", f"{self.timeout_s:g}", "--retries", "1"]
        cmd += ["--only-binary", ":none:" if query.sdist_ok else ":all:"]
        cmd += ["--python-version", query.python, "--implementation", "cp"]
        for tag in PIP_PLATFORM_TAGS[query.platform]:
            cmd += ["--platform", tag]
        if self.index_url:
            cmd += ["--index-url", self.index_url]
        for url in query.extra_index_urls:
            cmd += ["--extra-index-url", url]
        return cmd + [f"{query.name}<0"]


def _pip() -> List[str]:
    if importlib.util.find_spec("pip") is None:
        raise UserError(f"the pin check runs pip, which {sys.executable} lacks; install pip there")
    return [sys.executable, "-m", "pip"]


def _pip_environ() -> Dict[str, str]:
    return dict(os.environ, **_PIP_OVERRIDES)


def _parse_answer(query: IndexQuery, output: str, returncode: int) -> Tuple[str, ...]:
    for url, reason in _FETCH_FAILED.findall(output):
        if not reason.startswith("404"):  # 404: the index has no such project, which is an answer
            raise IndexUnreachable(f"pip could not fetch {url} ({reason[:160]}); check the network and pip's index")
    match = _VERSIONS.search(output)
    if not match:
        last = (output.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"could not read pip's answer about {query.name} (exit {returncode}): {last}")
    listed = match.group(1).strip()
    return () if listed == "none" else tuple(v.strip() for v in listed.split(","))


def environment_queries(env: Environment) -> List[Tuple[Requirement, IndexQuery]]:
    return [
        (req, IndexQuery(canonicalize_name(req.name), env.python, platform, req.sdist_ok, env.extra_index_urls))
        for req in requirements_of(env)
        for platform in env.platforms
    ]


def check_environments(envs: Sequence[Environment], index: Optional[PackageIndex] = None) -> List[str]:
    """One line per pin that the index has no file for, naming the file, the pin, the Python and the platform."""
    index = index or PackageIndex()
    pairs = [(env, req, query) for env in envs for req, query in environment_queries(env)]
    index.fetch(query for _, _, query in pairs)
    missing = [query for env, req, query in pairs if _problem(env, req, query, index.versions(query))]
    index.fetch(missing, verbose=True)
    problems = [_problem(env, req, query, index.versions(query)) for env, req, query in pairs]
    return [p for p in problems if p]


def _problem(env: Environment, req: Requirement, query: IndexQuery, versions: Tuple[str, ...]) -> Optional[str]:
    try:
        wanted = SpecifierSet(f"=={req.version}")
    except InvalidSpecifier:
        return f"{_shown(env)}: {req.name}=={req.version} ({req.where}) is not a valid version; fix the pin"
    if any(wanted.contains(v, prereleases=True) for v in _parsed(versions)):
        return None
    kind = "wheel or sdist" if req.sdist_ok else "wheel"
    where = "" if req.where == "pins" else f" ({req.where})"
    return (
        f"{_shown(env)}: {req.name}=={req.version}{where} has no {kind} for Python {env.python} on "
        f"{PLATFORM_LABELS[query.platform]}; {_nearest(req, versions)}"
    )


def _parsed(versions: Iterable[str]) -> List[Version]:
    parsed = []
    for text in versions:
        try:
            parsed.append(Version(text))
        except InvalidVersion:
            continue
    return sorted(set(parsed))


def _nearest(req: Requirement, versions: Tuple[str, ...]) -> str:
    every = _parsed(versions)
    releases = [v for v in every if not v.is_prerelease] or every
    if not releases:
        return f"the index has no {'file' if req.sdist_ok else 'wheel'} of {req.name} for it at all"
    span = f"{releases[0]} ... {releases[-1]} ({len(releases)} versions)" if len(releases) > 1 else str(releases[0])
    try:
        pinned = Version(req.version)
    except InvalidVersion:
        return f"the index has {span}"
    below = [v for v in releases if v < pinned][-1:]
    above = [v for v in releases if v > pinned][:1]
    return f"the index has {span}; nearest: {' and '.join(str(v) for v in below + above)}"


def _shown(env: Environment) -> str:
    path = Path(env.source or env.name)
    if path.is_absolute() and path.is_relative_to(ENV_DIR.parent):
        return str(path.relative_to(ENV_DIR.parent))
    return str(path)


def environment_files(folder: Path = ENV_DIR) -> List[Path]:
    """Every environment file, GPU ones included (load_environments reads one folder for one device)."""
    return sorted(folder.rglob("*.toml"))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m harness.host.pins [FILE ...]`: every file under environments/ when none is named."""
    paths = [Path(a) for a in (argv if argv is not None else sys.argv[1:])] or environment_files()
    try:
        problems = check_environments([load_environment(p) for p in paths])
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in problems:
        print(line)
    print(f"{len(paths)} environment files, {len(problems)} pins missing from the index", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
