"""A case's own requirements: read from its file without importing it, resolved against an environment's pins by
that environment's pip, installed in a venv of their own, recorded in the fingerprint, or the cells' one-line
reason where nothing fits."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

from harness.errors import UserError
from harness.host.requirements import declared_requirements, file_requirements, pip_reason
from harness.plan.registry import Case, requirement_key
from harness.record import Fingerprint, satisfied
from harness.run.requirements import Resolved, resolve_cases

CONFLICT = """Looking in links: /opt/wheels
ERROR: Cannot install torchvision>=0.12 because these package versions have conflicting dependencies.

The conflict is caused by:
    The user requested torchvision>=0.12
    The user requested (constraint) torchvision==0.9.1

To fix this you could try to:
1. loosen the range of package versions you've specified

ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/
"""
NO_MATCH = """ERROR: Ignored the following versions that require a different python version: 0.9.0 Requires-Python 3.11
ERROR: Could not find a version that satisfies the requirement kornia>=0.9 (from versions: 0.6.8, 0.7.3)
ERROR: No matching distribution found for kornia>=0.9
"""


def test_pips_refusal_is_one_line_naming_the_conflict():
    reason = pip_reason(CONFLICT)
    assert "\n" not in reason
    assert reason.startswith("pip: Cannot install torchvision>=0.12")
    assert "torchvision==0.9.1" in reason and "this environment's pin" in reason
    missing = pip_reason(NO_MATCH)
    assert "\n" not in missing and "No matching distribution found for kornia>=0.9" in missing


def test_requirements_are_read_from_the_file_without_importing_it(tmp_path):
    (tmp_path / "a.py").write_text(
        textwrap.dedent(
            """
            import not_installed_anywhere  # the host never imports a case file
            from harness import register_case
            REQUIRES = ["kornia>=0.6"]

            @register_case("one", family="grid_sample", inputs=None, requires=["torchvision>=0.12"])
            def one(params, op): ...

            @register_case("two", family="grid_sample", inputs=None)
            def two(params, op): ...
            """
        )
    )
    assert file_requirements(tmp_path / "a.py") == {("torchvision>=0.12",), ("kornia>=0.6",)}
    sets = declared_requirements([str(tmp_path)])
    assert ("kornia>=0.6",) in sets and ("torchvision>=0.12",) in sets
    assert ("kornia",) in sets  # the built-in kornia cases
    (tmp_path / "b.py").write_text(
        "from harness import register_case\nNEEDS = ['x']\nregister_case('b', requires=NEEDS)\n"
    )
    with pytest.raises(UserError, match="literal list of strings"):
        file_requirements(tmp_path / "b.py")


def test_a_requirement_key_ignores_order_case_and_spaces():
    assert requirement_key(["Kornia >= 0.6", "torchvision"]) == requirement_key(["torchvision", "kornia>=0.6"])


def test_installed_versions_are_checked_against_the_specifiers():
    assert satisfied("torchvision>=0.12", "0.13.1") and not satisfied("torchvision>=0.12", "0.9.1")
    assert satisfied("kornia==0.6.*", "0.6.8") and not satisfied("kornia<0.7,>=0.6.9", "0.6.8")
    assert not satisfied("kornia", None)


def _case(requires):
    return Case(name="c", family="grid_sample", model=None, inputs=None, requires=tuple(requires), source="x")


def test_without_a_plan_a_case_runs_where_its_requirements_are_installed():
    here = resolve_cases([_case(["pytest"])], {})["c"]
    assert here.reason is None and here.packages["pytest"]
    missing = resolve_cases([_case(["surely-not-installed-pkg"])], {})["c"]
    assert "not installed in this venv" in missing.reason and "nox -s matrix" in missing.reason
    planned = Resolved("kornia", {"kornia": "0.8.1"}, "/venv/bin/python")
    assert resolve_cases([_case(["kornia"])], {"kornia": planned})["c"] is planned
    unread = resolve_cases([_case(["kornia"])], {"torchvision": planned})["c"]
    assert "literal list" in unread.reason


def test_the_fingerprint_records_the_packages_and_hashes_as_before_without_them():
    plain = Fingerprint(python="3.10", torch="1.12.1")
    assert plain.hash() == Fingerprint.from_json(plain.to_json()).hash()
    with_kornia = plain.with_packages({"kornia": "0.8.1"})
    assert with_kornia.to_json()["packages"] == {"kornia": "0.8.1"}
    assert Fingerprint.from_json(with_kornia.to_json()) == with_kornia
    assert with_kornia.hash() != plain.hash()


# README's own example of a case with a requirement (the test runs what users read)
README = (ROOT / "README.md").read_text()
USER_CASE = next(b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "my_cases/kornia_remap.py" in b)


def test_a_users_case_with_requires_runs_through_nox_in_torch112(tmp_path):
    """README's "A case that needs packages of its own": its file in a folder of its own, no file of the project
    edited; the torch1.12 environment resolves kornia against its pins and runs the case in a venv of its own."""
    cases = tmp_path / "my_cases"
    cases.mkdir()
    (cases / "remap.py").write_text(USER_CASE)
    before = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    args = ["--cases-dir", str(cases), "--case", "my_remap", "--strategy", "native,custom", "--opset", "16"]
    args += ["--results-dir", str(tmp_path / "results"), "--artifacts", str(tmp_path / "artifacts"), "--no-memory"]
    environ = dict(os.environ, MATRIX_NO_REPLAY="1", MATRIX_NO_REPORT="1")
    done = subprocess.run(
        [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), "-s", "matrix(env='torch1.12')", "--", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=1500,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    records = [json.loads(line) for line in (tmp_path / "results" / "torch1.12.jsonl").read_text().splitlines()]
    assert {r["strategy"] for r in records} == {"native", "custom"}
    assert all(r["verdict"] == "pass" for r in records), [r["reason"] for r in records]
    kornia = {r["fingerprint"]["packages"]["kornia"] for r in records}
    assert len(kornia) == 1 and kornia.pop().startswith("0.8.")  # the newest kornia for torch 1.12 (0.8.2 needs 2.x)
    assert "requires kornia: kornia 0.8." in done.stdout + done.stderr
    after = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    assert after == before
