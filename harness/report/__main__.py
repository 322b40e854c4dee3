"""`python -m harness.report`: the same as `python -m harness report`."""

from __future__ import annotations

import sys

from harness.report.cli import main

if __name__ == "__main__":
    sys.exit(main())
