"""`python -m harness report`: a short pipeline, load -> build the view-model -> render -> write."""

from __future__ import annotations

import argparse
import gc
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional, TextIO

from harness.errors import ExitCode
from harness.report.load import Loaded, load


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        "--results",
        nargs="+",
        default=["results/"],
        metavar="PATH",
        help="results files, or folders searched for *.jsonl recursively (default: results/)",
    )
    parser.add_argument(
        "--out",
        default="reports/index.html",
        metavar="FILE",
        help="the page to write; results.csv and results.json go beside it (default: reports/index.html)",
    )
    parser.add_argument("--title", default="onnx-compat-matrix", help="the page's title")
    return parser


def report_unread(loaded: Loaded, stream: TextIO) -> None:
    """What was left out, one line each with its fix: refused files, and torn lines skipped inside read ones."""
    for refusal in loaded.refusals:
        print(f"refused {refusal.line()}", file=stream)
    for skipped in loaded.skipped:
        print(skipped.describe(), file=stream)


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while the page is made. The records and the tables built from them are
    millions of small objects that live until the page is written: each full collection would walk them all
    again, for nothing (it took a quarter of the render time). Restored after, as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run(args: argparse.Namespace, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    with no_cycle_collection():
        return _run(args, stdout, stderr)


def _run(args: argparse.Namespace, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    loaded = load(args.results)
    report_unread(loaded, stderr)
    if not loaded.records:
        print("nothing to render: no readable records in {}".format(" ".join(args.results)), file=stderr)
        return ExitCode.USAGE
    # Imported here so that reading files and --help stay quick, and matplotlib loads only when needed.
    from harness.report.exports import write_exports
    from harness.report.model import build_page
    from harness.report.render import write_page

    out = Path(args.out)
    page = build_page(loaded, title=args.title)
    write_page(page, out)
    exports = write_exports(loaded.records, out.parent)
    print(
        "wrote {} ({} cells from {} files, {} refused{}{}) and {}".format(
            out,
            page.cells,
            len(loaded.sources),
            len(loaded.refusals),
            f", {len(loaded.skipped)} torn lines skipped" if loaded.skipped else "",
            f", {loaded.superseded} older duplicates dropped" if loaded.superseded else "",
            ", ".join(str(p) for p in exports),
        ),
        file=stdout,
    )
    return ExitCode.OK


__all__: List[str] = ["add_arguments", "run"]
