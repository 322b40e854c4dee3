"""Laying the view-model out as one self-contained HTML page: templates, with the CSS and script inlined."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import jinja2
from markupsafe import Markup

from harness.record import SCHEMA_VERSION, Portability, portability_label
from harness.report.model import Page

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"


def environment() -> jinja2.Environment:
    # Autoescape everything: error messages and parameters come from third-party code and users.
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals.update(
        portability_label=portability_label,
        portabilities=[p.value for p in Portability],
        schema_version=SCHEMA_VERSION,
    )
    return env


def _asset(name: str, closing: str) -> str:
    text = (STATIC / name).read_text(encoding="utf-8")
    if closing in text.lower():
        raise ValueError(f"{name} must not contain {closing!r}: it is inlined into the page")
    return text


def render(page: Page) -> str:
    css = _asset("report.css", "</style")
    script = _asset("report.js", "</script")
    # The page runs only its own script: an injected <script> would not match this hash.
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    template = environment().get_template("page.html.j2")
    precision = page.precision.chart
    return template.render(
        page=page,
        css=Markup(css),
        script=Markup(script),
        script_hash="sha256-" + digest,
        data_json=Markup(page.data_json),  # already made inert by table.safe_json
        charts=[(chart, Markup(chart.svg) if chart.svg else None) for chart in page.charts],
        precision_svg=Markup(precision.svg) if precision is not None and precision.svg else None,
    )


def write_page(page: Page, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(page), encoding="utf-8")
    return out
