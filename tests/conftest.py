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


# Small real models for the worker's, the artifacts' and the converter's tests: a layernorm-family case whose model
# scales what the strategy's operator returns.
def unit_env():
    from harness.worker.fingerprint import collect

    return collect("unitenv")


def scale_model(op, factor=2.0):
    import torch

    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.op, self.factor = op, factor

        def forward(self, x):
            return self.op(x, (x.shape[-1],)) * self.factor

    return Scale()


def unit_case(model=None, inputs=None, **kw):
    import torch

    from harness.plan.registry import Case

    return Case(
        name="unit",
        family="layernorm",
        model=model or (lambda params, op: scale_model(op)),
        inputs=inputs or (lambda params, shape, gen: (torch.randn(2, 5, generator=gen),)),
        **kw,
    )


def keep_graph(tmp_path, case, cell):
    """The cell run through its stages with its graph kept under tmp_path (what `harness replay` and `convert` take)."""
    from harness.campaign.options import Options
    from harness.record import Verdict
    from harness.strategies import get_strategy
    from harness.worker.pipeline import run_cell

    opts = Options(threads=1, latency=False, memory=False, artifacts_dir=str(tmp_path))
    blank = cell.record(unit_env().fingerprint, Verdict.PASS, reference="native", portability="standard", tags=())
    return run_cell(
        blank, cell, case, get_strategy("layernorm", cell.strategy), get_strategy("layernorm", "native"), opts
    )
