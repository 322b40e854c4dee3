from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = Path(__file__).resolve().parent / "resources"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def run_harness(*args: str, env_name: str = "testenv", timeout: float = 600, extra_env=None):
    """`python -m harness ...` in a subprocess of this interpreter, as a user runs it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), HARNESS_ENV=env_name, PYTHONUNBUFFERED="1")
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=str(ROOT),
    )


@pytest.fixture
def harness_cli():
    return run_harness


# The report's view models from a test module's own `loaded` fixture (the records it loads): frame, page, page data.
@pytest.fixture(scope="module")
def frame(loaded):
    from harness.report.table import build_frame

    return build_frame(loaded.records)


@pytest.fixture(scope="module")
def page(loaded):
    from harness.report.model import build_page

    return build_page(loaded)


@pytest.fixture(scope="module")
def data(page):
    import json

    return json.loads(page.data_json)
