"""The reporter: merges results files from any number of environments and machines into one HTML page.

It reads files only; it never imports torch and never runs a case. `python -m harness report` runs it.
"""

from __future__ import annotations

from harness.report.cli import add_arguments, run

__all__ = ["add_arguments", "run"]
