"""README's promises: the two commands lead the file, and its own-case example runs as written."""

from __future__ import annotations

import json
import re

from conftest import ROOT, run_harness

README = (ROOT / "README.md").read_text()


def test_readme_starts_with_the_two_commands_ci_runs():
    block = re.search(r"```sh\n(.*?)```", README, re.S).group(1)
    assert "nox -s matrix" in block.splitlines()[0]
    assert "nox -s tests" in block.splitlines()[1]
    assert "nox -s tests" in (ROOT / ".ci" / "run").read_text()


def test_the_own_case_example_runs_through_the_harness(tmp_path):
    example = next(b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "my_cases/warp.py" in b)
    folder = tmp_path / "my_cases"
    folder.mkdir()
    (folder / "warp.py").write_text(example)
    out = tmp_path / "r.jsonl"
    proc = run_harness(
        "run",
        "--cases-dir",
        str(folder),
        "--case",
        "my_warp",
        "--strategy",
        "custom,naive",
        "--opset",
        "16",
        "--exporter",
        "torchscript",
        "--out",
        str(out),
        "--no-latency",
        "--no-memory",
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    records = {(r["strategy"], r["shape_mode"]): r for r in map(json.loads, out.read_text().splitlines())}
    assert records[("custom", "static")]["verdict"] == "pass"
    assert records[("custom", "dynamic")]["verdict"] == "pass", records[("custom", "dynamic")]["reason"]
    assert records[("custom", "dynamic")]["parity"]["shapes_checked"] == 3
    # the unmodified model's F.grid_sample really went through each strategy: naive clamps at the borders
    assert records[("naive", "static")]["verdict"] == "mismatch"


def _torch18_python():
    """The torch1.8 environment's interpreter, where `nox -s "matrix(env='torch1.8')"` (or .ci/run) built it."""
    import glob
    import os

    cache = os.environ.get("ONNX_COMPAT_CACHE") or os.path.expanduser("~/.cache/onnx-compat-matrix")
    found = sorted(glob.glob(os.path.join(cache, "venvs", "torch1.8-*", "bin", "python")))
    link = ROOT / ".nox" / "torch1.8" / "bin" / "python"
    return str(link) if link.exists() else (found[-1] if found else None)


def test_the_tutorial_stn_exports_on_torch_1_8_as_written(tmp_path):
    import subprocess

    import pytest

    python = _torch18_python()
    if python is None:
        pytest.skip("no torch1.8 environment yet: `nox -s \"matrix(env='torch1.8')\"` builds it (.ci/run does)")
    example = next(b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "stn_export.py" in b)
    check = (
        "\nimport onnx, onnxruntime\n"
        "m = onnx.load('stn.onnx')\n"
        "assert [i.version for i in m.opset_import if i.domain in ('', 'ai.onnx')] == [11]\n"
        "assert not any(n.op_type in ('GridSample', 'AffineGrid') for n in m.graph.node)\n"
        "x3 = torch.rand(3, 1, 28, 28)\n"
        "got = onnxruntime.InferenceSession('stn.onnx').run(None, {'input': x3.numpy()})[0]\n"
        "want = model(x3).detach().numpy()\n"
        "print('torch', torch.__version__, 'max abs', abs(got - want).max())\n"
        "assert abs(got - want).max() < 1e-5\n"
    )
    (tmp_path / "stn_export.py").write_text(example + check)
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([python, "stn_export.py"], cwd=str(tmp_path), capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "torch 1.8.1" in proc.stdout
