"""benchmarks/grid_sample_table.py prints README's ratio tables from bench-op's JSON files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _rec(shape, impl, ms, mode="bilinear", padding="zeros", peak=10.0, diff=0.0, note=""):
    return {
        "shape": shape,
        "mode": mode,
        "padding": padding,
        "impl": impl,
        "median_ms": ms,
        "iqr_ms": 0.1,
        "noisy": False,
        "peak_mb": peak,
        "max_abs_diff": diff,
        "note": note,
        "schema_version": 1,
    }


def test_tables_from_an_earlier_run(tmp_path):
    env = {"torch": "2.13.0+cpu", "onnxruntime": "1.32.0", "threads": 2}
    main = [
        _rec("ref", "native", 5.0),
        _rec("ref", "custom", 10.0),
        _rec("ref", "mmcv", 40.0, peak=250.0),
        _rec("ref", "ort-kernel", 20.0),
        _rec("ref", "ort-custom", 30.0, peak=120.0),
        _rec("ref", "ort-mmcv", 60.0, peak=160.0),
    ]
    sweep = [
        _rec("fmap", "native", 2.0, "nearest", "border"),
        _rec("fmap", "custom", 3.0, "nearest", "border"),
        _rec("fmap", "ort-kernel", None, "nearest", "border", note="5-D GridSample needs opset 20"),
        _rec("fmap", "ort-custom", 4.0, "nearest", "border", diff=1e-7),
    ]
    for name, records in (("main", main), ("sweep", sweep)):
        (tmp_path / f"torch2-{name}.json").write_text(json.dumps({"environment": env, "records": records}))
    out = _tables_from(tmp_path)
    row = next(line for line in out.splitlines() if "| ref |" in line)
    assert "torch2 (torch 2.13.0, ORT 1.32.0)" in row
    cells = [c.strip() for c in row.split("|")]
    assert cells[5:11] == ["0.25x", "2.00x", "20.00", "30.00", "0.50x", "1.50x"], cells
    assert "10 / 250; 120 / 160" in row
    sweep_row = next(line for line in out.splitlines() if "nearest / border" in line)
    assert "1.50x" in sweep_row and "- (5-D GridSample needs opset 20)" in sweep_row and "1.0e-07; 0.0e+00" in sweep_row


def test_tables_read_what_bench_op_writes(tmp_path):
    """The JSON that bench-op's own writer produces is what the table script reads."""
    from harness.bench.cli import write_json
    from harness.bench.measure import BenchRecord

    records = [
        BenchRecord("fmap", "bilinear", "zeros", impl, ms, 0.01, impl == "custom", 16.0, 0.0)
        for impl, ms in (("native", 1.0), ("custom", 3.0), ("ort-kernel", 2.0), ("ort-custom", 4.0))
    ]
    environment = {"python": "3.11.9", "torch": "2.13.0+cpu", "threads": 2, "onnxruntime": "1.32.0"}
    write_json(str(tmp_path / "torch2-main.json"), environment, records)
    out = _tables_from(tmp_path)
    row = next(line for line in out.splitlines() if "| fmap |" in line)
    cells = [c.strip() for c in row.split("|")]
    assert cells[1:8] == ["torch2 (torch 2.13.0, ORT 1.32.0)", "fmap", "1.00", "3.00~", "-", "3.00x", "2.00"]
    assert cells[8:11] == ["4.00", "-", "2.00x"]


def _tables_from(folder):
    """benchmarks/grid_sample_table.py re-printing the tables from a folder of bench-op JSON."""
    script = str(ROOT / "benchmarks" / "grid_sample_table.py")
    args = [sys.executable, script, "--from", str(folder), "--envs", "torch2"]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout
