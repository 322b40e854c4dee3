"""The rendered page: golden file, escaping of hostile strings, the files beside it, and no torch import.

Regenerate the golden page after an intended change with: UPDATE_GOLDEN=1 pytest tests/test_report_render.py
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from harness.cli import main as harness_main
from harness.record import CellRecord
from harness.report.exports import record_json, record_text
from harness.report.load import load
from harness.report.table import safe_json


def main(argv):
    """`python -m harness report ARGV`, in this process."""
    return harness_main(["report", *argv])


HERE = Path(__file__).parent
ROOT = HERE.parent
RECORDS = HERE / "resources" / "records"
REPLAYS = HERE / "resources" / "replays"  # a slice of real records: exporting cells and their replays
PRECISIONS = HERE / "resources" / "precisions"  # those graphs converted to fp16 and int8, replayed, or not converted
GOLDEN = HERE / "resources" / "golden" / "index.html"
HOSTILE = "<script>alert"


def scrub(html: str) -> str:
    """Leave out what changes without the page's meaning changing: time, paths, assets, matplotlib's drawing."""
    html = html.replace(str(RECORDS), "RECORDS").replace(str(REPLAYS), "REPLAYS").replace(str(PRECISIONS), "PRECISIONS")
    html = re.sub(r'<span class="generated">[^<]*</span>', '<span class="generated">TIME</span>', html)
    html = re.sub(r"<style>.*?</style>", "<style>/* report.css */</style>", html, flags=re.S)
    html = re.sub(r"<script>.*?</script>", "<script>/* report.js */</script>", html, flags=re.S)
    html = re.sub(r"script-src 'sha256-[^']+'", "script-src 'sha256-HASH'", html)
    return re.sub(r'(<svg role="img" aria-label="[^"]*")[^>]*>.*?</svg>', r"\1>…</svg>", html, flags=re.S)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("report") / "site" / "index.html"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", "1764436500")
        assert main(["--results", str(RECORDS), str(REPLAYS), str(PRECISIONS), "--out", str(out)]) == 0
    yield out.parent


@pytest.fixture(scope="module")
def html(site: Path) -> str:
    return (site / "index.html").read_text(encoding="utf-8")


def embedded_data(page: str) -> Dict[str, Any]:
    match = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, flags=re.S)
    assert match is not None
    return json.loads(match.group(1), parse_constant=lambda name: pytest.fail(f"bare {name} in the page's JSON"))


def test_page_matches_the_golden_file(html: str) -> None:
    page = scrub(html)
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(page, encoding="utf-8")
    expected = GOLDEN.read_text(encoding="utf-8")
    if page != expected:
        diff_at = next(i for i, (a, b) in enumerate(zip(page + "\0", expected + "\0")) if a != b)
        got, want = page[diff_at - 60 : diff_at + 60], expected[diff_at - 60 : diff_at + 60]
        pytest.fail(
            f"the page differs from {GOLDEN} near character {diff_at}:\n  got:      {got!r}\n  expected: {want!r}\n"
            f"if the change is intended, run UPDATE_GOLDEN=1 pytest {__file__}"
        )


def test_hostile_strings_are_escaped_everywhere(html: str, site: Path) -> None:
    assert HOSTILE not in html
    assert "</script><script>" not in html
    assert html.count("<script") == 2  # the data block and the page's own script, nothing injected
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as text where the templates print it
    data = embedded_data(html)
    assert any("<script>alert(1)</script>" in row[4] for row in data["rows"])  # intact once parsed
    assert any("</script><script>alert(2)</script>" in s for s in data["strings"])
    assert HOSTILE not in (site / "results.json").read_text(encoding="utf-8")


def test_the_page_only_runs_its_own_script(html: str) -> None:
    script = re.search(r"<script>(.*?)</script>", html, flags=re.S)
    assert script is not None
    digest = base64.b64encode(hashlib.sha256(script.group(1).encode("utf-8")).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in html
    assert "default-src 'none'" in html
    for reference in re.findall(r'(?:src|href)="([^"#][^"]*)"', html):
        assert reference in ("data:,", "results.csv", "results.json"), reference  # nothing fetched from a network


def test_refusals_are_on_the_page_too(html: str) -> None:
    assert "1 results file was left out" in html
    assert "schema_version 99 is not readable by this harness (reads 1, 2, 3 and 4)" in html


def test_a_torn_line_is_named_in_the_sources_with_its_fix(html: str) -> None:
    sources = html[html.index('<section id="sources">') :]
    torn = str(RECORDS / "truncated.jsonl")
    assert f"<code>{torn}</code>: 2 records" in sources  # its intact records were read
    assert f'<li class="warn">torn line <code>{torn}:2: skipped, not valid JSON' in sources
    assert "sets the line aside and measures its cell again" in sources
    assert '<a href="#sources" class="warn">1 torn line skipped</a>' in html


def test_the_sources_say_how_many_records_were_migrated(html: str) -> None:
    sources = html[html.index('<section id="sources">') :]
    assert '231 records <span class="muted">(231 of schema 1, read through the migration to schema 4)' in sources
    assert "read through its migration to schema 4: 581 of schema 1, 318 of schema 2." in sources


def test_merged_results_are_written_beside_the_page(site: Path) -> None:
    with open(site / "results.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 597 + 297  # the exporting cells, the replays and the conversions that failed
    wanted = {"env", "verdict", "param_mode", "latency_ort_median_s", "memory_eager.working_set_method"}
    assert wanted | {"fingerprint_torch"} <= set(rows[0])
    assert {"reference", "runtime", "precision", "lat_reference", "fingerprint_platform"} <= set(rows[0])
    assert {"converter", "mean_abs", "psnr"} <= set(rows[0])
    assert next(r for r in rows if r["precision"] == "fp16" and r["verdict"] == "pass")["mean_abs"] != ""
    records = json.loads((site / "results.json").read_text(encoding="utf-8"))
    assert len(records) == 597 + 297 and records[0]["schema_version"] == 4  # as the records are now: record.to_json()
    assert {r["reference"] for r in records if r["family"] == "control_flow"} == {"eager"}
    runtime = records[0]["runtime"]
    assert (runtime["name"], runtime["version"]) == ("onnxruntime", records[0]["fingerprint"]["onnxruntime"])
    assert runtime["env"] is None  # judged by the exporting environment's own onnxruntime, not a replay
    replays = [r for r in rows if r["runtime_env"]]
    assert len(replays) == 297 and {r["runtime"] for r in replays} == {"onnxruntime", "openvino"}
    assert (site / "results.json").read_text(encoding="utf-8").count("\n") == len(records) + 2  # one record a line


def test_results_json_holds_each_records_to_json() -> None:
    """The exports are written without CellRecord.to_json() (too slow for thousands of records), to the same JSON."""
    records = load([str(RECORDS), str(REPLAYS), str(PRECISIONS)]).records
    nan = records[0].with_(wall_s=math.nan)  # to_json writes null: JSON has no NaN
    for record in records + [nan]:
        assert record_json(record) == record.to_json()
        assert record_text(record) == safe_json(record.to_json())
        assert CellRecord.from_json(json.loads(record_text(record))) == CellRecord.from_json(record.to_json())


def test_non_finite_numbers_do_not_break_the_page(tmp_path: Path) -> None:
    lines = (RECORDS / "torch2.jsonl").read_text(encoding="utf-8").splitlines()
    record = next(r for r in map(json.loads, lines) if r["parity"])
    record["parity"] = dict(record["parity"], max_abs=math.nan, max_rel=math.inf)
    record["verdict"] = "mismatch"
    (tmp_path / "nan.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert main(["--results", str(tmp_path / "nan.jsonl"), "--out", str(tmp_path / "out" / "index.html")]) == 0
    data = embedded_data((tmp_path / "out" / "index.html").read_text(encoding="utf-8"))
    assert data["details"][0]["p"][0] is None or data["details"][0]["p"][0] == "nan"


def test_environment_limits_are_shown_once_per_environment_and_escaped(tmp_path: Path) -> None:
    lines = (RECORDS / "torch1.8.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    limits = {
        "exporter dynamo": "torch 1.8.1 has no dynamo exporter (it came with torch 2.x)",
        "opsets above 13": "torch 1.8.1 exports opsets up to 13 <script>alert(3)</script>",
    }
    records = [dict(json.loads(line), schema_version=2, reference="native", env_limits=limits) for line in lines]
    # The same environment on a second machine (another fingerprint, another row): its limits are not said twice.
    gpu = dict(records[0], device="cuda", fingerprint=dict(records[0]["fingerprint"], gpu="NVIDIA H200"))
    records.append(gpu)
    for record in records:
        for timing in (record.get("latency") or {}).values():
            timing.setdefault("number", 1)  # as the worker writes it now
    (tmp_path / "limits.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert main(["--results", str(tmp_path / "limits.jsonl"), "--out", str(tmp_path / "out" / "index.html")]) == 0
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    table = page[page.index('<section id="environments">') : page.index('<section id="sources">')]
    assert table.count("<tr><th>torch1.8</th>") == 2 and table.count('<tr class="env-limits">') == 1
    assert "<strong>exporter dynamo</strong>: torch 1.8.1 has no dynamo exporter (it came with torch 2.x)</li>" in table
    assert "exports opsets up to 13 &lt;script&gt;alert(3)&lt;/script&gt;" in table
    assert "<script>alert(3)" not in page
    assert "<th>platform</th>" in table and "<td>Linux-6.1.0-28-amd64-x86_64-with-glibc2.36</td>" in table


def test_a_hostile_runtime_error_is_shown_as_text(tmp_path: Path) -> None:
    lines = (REPLAYS / "replay-openvino2026.jsonl").read_text(encoding="utf-8").splitlines()
    record = next(r for r in map(json.loads, lines) if r["verdict"] == "load_failed" and r["env"] == "torch1.8")
    hostile = "Exception from frontend.cpp:<script>alert(7)</script> & <img src=x onerror=alert(8)>"
    record["reason"] = hostile
    record["stages"] = [dict(s, message=hostile) if s["outcome"] == "failed" else s for s in record["stages"]]
    record["runtime"] = dict(record["runtime"], version='2026.4.1"><script>alert(9)</script>')
    exporting = (REPLAYS / "torch1.8.jsonl").read_text(encoding="utf-8")  # the replay's exporting cell, and others
    (tmp_path / "records.jsonl").write_text(exporting + json.dumps(record) + "\n", encoding="utf-8")
    out = tmp_path / "out" / "index.html"
    assert main(["--results", str(tmp_path / "records.jsonl"), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<script>alert(" not in page and "<img src=x" not in page
    assert page.count("<script") == 2
    ladder = page[page.index('<section id="ladder">') : page.index('<section id="upgrade">')]
    assert "frontend.cpp:&lt;script&gt;alert(7)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(8)&gt;" in ladder
    assert "&lt;script&gt;alert(9)&lt;/script&gt;</th>" in ladder  # the runtime's label, a column header
    data = embedded_data(page)
    assert hostile in data["strings"]  # intact once parsed; the script puts it in as text
    assert any("<script>alert(9)" in label for label in data["dims"]["runtime"])


def test_rendering_never_imports_torch(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from harness.cli import main\n"
        "code = main(['report', '--results', {records!r}, '--out', {out!r}])\n"
        "assert code == 0, code\n"
        "leaked = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))\n"
        "assert not leaked, leaked\n"
    ).format(records=str(RECORDS), out=str(tmp_path / "index.html"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "index.html").exists()
