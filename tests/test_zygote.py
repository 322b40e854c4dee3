"""The zygote: each measurement in a child forked from a fresh runtime. Its answers come back, its failures are named
(a signal, an exception), it keeps serving after either, and a child's footprint counts no library page the zygote
had already paged in."""

from __future__ import annotations

import os
import signal
import sys
import tempfile

import numpy as np
import pytest

from harness.judge.measure import FRESH_FOOTPRINT_METHOD, Footprint
from harness.judge.wire import tiny_model
from harness.judge.zygote import Zygote, ZygoteError, in_child
from harness.replay.runtimes import OnnxRuntime

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the zygote forks and reads /proc (Linux)")


def _doubled(x):
    return 2 * x, in_child()


def _segfault():
    os.kill(os.getpid(), signal.SIGSEGV)


def _refuses():
    raise ValueError("no such graph")


def _tiny_footprint(path):
    footprint = Footprint()
    OnnxRuntime("fresh").load(path, 1, ("x",)).run([np.ones((1,), np.float32)])
    return footprint.peak(FRESH_FOOTPRINT_METHOD)


@pytest.fixture
def zygote():
    started = Zygote.start(OnnxRuntime("fresh").initialise)
    yield started
    started.close()


def test_a_childs_answer_comes_back_and_its_failures_are_named(zygote):
    assert zygote.call(_doubled, 21) == (42, True) and not in_child()
    with pytest.raises(ZygoteError, match=f"killed by signal {int(signal.SIGSEGV)}"):
        zygote.call(_segfault)
    with pytest.raises(ZygoteError, match="ValueError: no such graph"):
        zygote.call(_refuses)
    assert zygote.call(_doubled, 1) == (2, True)  # still serving


def test_a_childs_footprint_counts_no_library_page_the_zygote_had_paged_in(zygote):
    """Fork copies no page-table entry of a file mapping: without the child mapping the zygote's resident pages
    again, a one-node session would count about 11 MB of onnxruntime's library as its own growth."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tiny.onnx")
        with open(path, "wb") as fh:
            fh.write(tiny_model())
        peak = zygote.call(_tiny_footprint, path)
    assert peak.method == FRESH_FOOTPRINT_METHOD
    assert peak.peak_bytes is not None and peak.peak_bytes < 2 << 20, peak


def test_the_zygote_has_paid_the_judges_first_calls_before_it_forks():
    """numpy loads numpy.ma the first time a percentile is taken (40 ms): the zygote's warm-up pays it once, so that
    no child pays it again. Checked in a fresh interpreter, where nothing had loaded it yet."""
    import subprocess

    code = (
        "import sys\n"
        "from harness.replay.judge import warm_up\n"
        "from harness.replay.runtimes import OnnxRuntime\n"
        "before = 'numpy.ma' in sys.modules\n"
        "warm_up(OnnxRuntime('fresh'))\n"
        "print(before, 'numpy.ma' in sys.modules)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    assert out.stdout.split() == ["False", "True"], out.stderr
