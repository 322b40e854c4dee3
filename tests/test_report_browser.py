"""The page in a real browser: headless Chromium driven by Playwright, loading the page from file://.

Needs Debian's `chromium` package (/usr/bin/chromium, or REPORT_CHROMIUM=/path) and `pip install playwright`;
never `playwright install`: the test drives the system browser. Screenshots go to $REPORT_SCREENSHOT_DIR if set.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from harness.cli import main as harness_main


def main(argv):
    """`python -m harness report ARGV`, in this process."""
    return harness_main(["report", *argv])


RECORDS = Path(__file__).parent / "resources" / "records"
REPLAYS = Path(__file__).parent / "resources" / "replays"
PRECISIONS = Path(__file__).parent / "resources" / "precisions"
OV = "OpenVINO 2026.4.1"
CHROMIUM = os.environ.get("REPORT_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"{CHROMIUM} is absent: install Debian's chromium package to run the browser test",
    ),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "index.html"
    assert main(["--results", str(RECORDS), str(REPLAYS), "--out", str(out)]) == 0
    return out.parent


@pytest.fixture(scope="module")
def records(site: Path) -> List[Dict[str, Any]]:
    return json.loads((site / "results.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def exported(records: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The records the matrix shows at first: each environment's own runtime's, not the replays."""
    return [r for r in records if r["runtime"]["env"] is None]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - a missing dependency must fail, not skip
        pytest.fail(f"playwright is not installed: pip install playwright (the test drives {CHROMIUM})")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


def save_screenshot(page: Any, directory: Path, name: str) -> None:
    path = directory / name
    page.screenshot(path=str(path), full_page=name.endswith("full.png"))
    wanted = os.environ.get("REPORT_SCREENSHOT_DIR")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        shutil.copy(str(path), str(Path(wanted) / name))


def open_page(browser: Any, site: Path, problems: List[str], dialogs: List[str]) -> Any:
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.on(
        "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto((site / "index.html").as_uri())
    return page


def test_filter_details_and_upgrade_in_chromium(
    browser: Any, site: Path, exported: List[Dict[str, Any]], tmp_path: Path
) -> None:
    records = exported
    problems: List[str] = []
    dialogs: List[str] = []
    page = open_page(browser, site, problems, dialogs)

    chips = page.locator("#matrix-table button.chip")
    assert chips.count() == len(records)
    save_screenshot(page, tmp_path, "report-top.png")

    # A filter: one environment, then only what does not pass there.
    page.select_option('#filters select[data-dim="env"]', "torch1.8")
    assert chips.count() == sum(1 for r in records if r["env"] == "torch1.8")
    page.select_option('#filters select[data-dim="verdict"]', "!pass")
    assert chips.count() == sum(1 for r in records if r["env"] == "torch1.8" and r["verdict"] != "pass")
    page.click("#filters-reset")
    assert chips.count() == len(records)

    # Pivot: exporter and device in the columns instead of environment and opset.
    page.select_option("#pivot", label="exporter × device")
    assert page.locator("#matrix-table thead").inner_text().count("torchscript") == 1
    assert chips.count() == len(records)
    page.select_option("#pivot", label="environment × opset")

    # A cell's details, for the export error that carries a hostile message.
    page.select_option('#filters select[data-dim="case"]', "loop_scan")
    page.select_option('#filters select[data-dim="verdict"]', "export_failed")
    assert chips.count() == 1
    chips.first.click()
    panel = page.locator("#details")
    assert panel.is_visible()
    text = panel.inner_text()
    assert "export failed" in text and "UnsupportedOperatorError" in text
    assert "prim::PythonOp <script>alert(1)</script>" in text  # shown as text, not run
    assert "2.13.0+cpu" in text  # the environment's fingerprint
    save_screenshot(page, tmp_path, "report-details.png")
    page.click("#details-close")
    assert not panel.is_visible()
    page.click("#filters-reset")

    # The upgrade view: switch the pair, and open a changed cell from it.
    # It opens on the newest step (torch1.12 -> torch2), the upgrade a user takes next.
    body = page.locator("#upgrade-body")
    assert "pick in torch1.12" in body.inner_text() and "pick in torch2" in body.inner_text()
    page.select_option("#upgrade-old", "torch1.8")
    assert "pick in torch1.8" in body.inner_text()
    page.select_option("#upgrade-old", "torch1.12")
    assert "pick in torch1.12" in body.inner_text() and "pick in torch2" in body.inner_text()
    body.locator("details.change-family > summary").first.click()
    body.locator("details.change-group > summary").first.click()
    body.locator("table.changes button.chip").first.click()
    assert panel.is_visible()
    page.keyboard.press("Escape")
    page.select_option("#upgrade-new", "torch1.12")
    assert "Pick two different environments" in body.inner_text()

    # The advisor: a pick from the overview shows its card.
    page.locator('button.pick-button[data-card="advice-torch2-16-cpu-grid_sample"]').click()
    card = page.locator("#advice-torch2-16-cpu-grid_sample")
    assert card.is_visible() and "native" in card.locator(".pick-name").inner_text()
    assert page.locator("article.advice-card:visible").count() == 1

    page.locator("#upgrade-new").select_option("torch2")
    page.evaluate("window.scrollTo(0, 0)")
    save_screenshot(page, tmp_path, "report-full.png")
    assert page.evaluate("document.querySelectorAll('script').length") == 2
    assert dialogs == []
    assert problems == []
    page.close()


def test_runtimes_in_chromium(browser: Any, site: Path, records: List[Dict[str, Any]], tmp_path: Path) -> None:
    problems: List[str] = []
    dialogs: List[str] = []
    page = open_page(browser, site, problems, dialogs)
    chips = page.locator("#matrix-table button.chip")

    # The matrix: one runtime's records, then every record; a replay's details name the runtime and its origin.
    page.select_option('#filters select[data-dim="runtime"]', OV)
    assert chips.count() == sum(1 for r in records if r["runtime"]["version"] == "2026.4.1")
    page.select_option('#filters select[data-dim="runtime"]', "")
    assert chips.count() == len(records)
    page.select_option('#filters select[data-dim="runtime"]', OV)
    page.select_option('#filters select[data-dim="strategy"]', "contrib")
    page.select_option('#filters select[data-dim="verdict"]', "load_failed")
    chips.first.click()
    text = page.locator("#details").inner_text()
    assert "No conversion rule found for operations: com.microsoft.GridSample" in text
    assert "openvino2026" in text and "exported by" in text
    page.locator("#details button.chip").first.click()  # to the exporting cell, which lists its replays
    assert "the same graph in other runtimes" in page.locator("#details").inner_text().lower()
    page.keyboard.press("Escape")
    page.click("#filters-reset")
    assert chips.count() == sum(1 for r in records if r["runtime"]["env"] is None)

    # The advisor: the same question for a deployment runtime.
    page.select_option('select[data-adv="env"]', "torch1.12")
    page.select_option('select[data-adv="opset"]', "16")
    page.select_option('select[data-adv="runtime"]', OV)
    card = page.locator("article.advice-card:visible")
    assert card.count() == 1 and card.get_attribute("id") == "advice-torch1.12-16-cpu-grid_sample-OpenVINO-2026.4.1"
    assert "fewer samples" in card.inner_text() and "refused at load by" in card.inner_text()
    page.select_option('select[data-adv="runtime"]', "")
    assert page.locator("article.advice-card:visible").get_attribute("id") == "advice-torch1.12-16-cpu-grid_sample"

    # The ladder: a failing square opens the runtime's own message.
    failing = page.locator("#ladder td.rung-cell details").first
    failing.locator("summary").click()
    assert "ONNXRuntimeError" in failing.inner_text() or "OpenVINO" in failing.inner_text()

    # The upgrade view between two runtimes of one environment's graphs.
    page.select_option("#upgrade-mode", "runtimes")
    page.select_option("#upgrade-env", "torch1.12")
    body = page.locator("#upgrade-body")
    assert "pick in onnxruntime 1.12.1" in body.inner_text() and "pick in onnxruntime 1.32.0" in body.inner_text()
    assert page.locator("#upgrade-runtime-note").is_visible()
    page.select_option("#upgrade-rt-new", "onnxruntime 1.8.1")
    assert "now fails" in body.inner_text()
    page.select_option("#upgrade-rt-old", "onnxruntime 1.20.1")
    assert "up the ladder" in body.inner_text()  # a downgrade from a runtime that is not its own: not precomputed
    page.select_option("#upgrade-rt-new", OV)  # the top rung is offered too
    assert "pick in OpenVINO 2026.4.1" in body.inner_text()
    save_screenshot(page, tmp_path, "report-runtimes-full.png")
    assert dialogs == [] and problems == []
    page.close()


def test_precisions_in_chromium(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "site" / "index.html"
    assert main(["--results", str(REPLAYS), str(PRECISIONS), "--out", str(out)]) == 0
    records = json.loads((out.parent / "results.json").read_text(encoding="utf-8"))
    problems: List[str] = []
    dialogs: List[str] = []
    page = open_page(browser, out.parent, problems, dialogs)
    chips = page.locator("#matrix-table button.chip")

    # The advisor at a precision: converted graphs are judged in replays only, so a deployment runtime is needed.
    page.select_option('select[data-adv="env"]', "torch1.12")
    page.select_option('select[data-adv="opset"]', "16")
    page.select_option('select[data-adv="precision"]', "fp16")
    assert page.locator("article.advice-card:visible").count() == 0
    assert "pick one under" in page.locator("#advisor-none").inner_text()
    page.select_option('select[data-adv="runtime"]', "onnxruntime 1.32.0")
    card = page.locator("article.advice-card:visible")
    assert card.get_attribute("id") == "advice-torch1.12-16-cpu-grid_sample-onnxruntime-1.32.0-fp16"
    assert "converted to fp16" in card.inner_text()

    # The matrix: a converted precision under each environment's own runtime shows nothing, and says why.
    page.select_option('#filters select[data-dim="precision"]', "int8-static")
    assert chips.count() == 0 and "set the runtime filter to all" in page.locator("#matrix-table").inner_text()
    page.select_option('#filters select[data-dim="runtime"]', "")
    assert chips.count() == sum(1 for r in records if r["precision"] == "int8-static")
    page.select_option("#pivot", label="precision × runtime")
    head = page.locator("#matrix-table thead").inner_text()
    assert "int8-static" in head and "converter" in head  # the conversion that failed, in its own column
    page.select_option('#filters select[data-dim="verdict"]', "mismatch")
    chips.first.click()
    text = page.locator("#details").inner_text()
    assert "mean abs difference" in text and "converted from the graph exported by" in text
    page.keyboard.press("Escape")

    # The precision view: the tolerances, a row per strategy, and the chart.
    section = page.locator("#precision")
    assert "5% of the reference output's range" in section.inner_text()
    assert section.locator("table.precision tbody tr").count() >= 4 and section.locator("svg").count() == 1
    save_screenshot(page, tmp_path, "report-precision-full.png")
    assert dialogs == [] and problems == []
    page.close()
