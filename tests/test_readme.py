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
