from __future__ import annotations

import pytest

from harness.judge.measure import Measurement, peak_rss_of, time_callable


class FakeClock:
    """Each call of the timed function advances time by the next step."""

    def __init__(self, steps):
        self.now = 0.0
        self.steps = list(steps)
        self.calls = 0

    def timer(self):
        return self.now

    def work(self):
        self.now += self.steps[self.calls % len(self.steps)]
        self.calls += 1


def test_block_size_grows_until_a_block_lasts_the_minimum():
    clock = FakeClock([0.001])
    m = time_callable(clock.work, threads=2, min_block_s=0.01, budget_s=0.05, warmup=0, timer=clock.timer)
    assert m.number >= 10
    assert m.median == pytest.approx(0.001)
    assert m.iqr == pytest.approx(0.0, abs=1e-12)
    assert not m.noisy
    timing = m.timing()
    assert timing.threads == 2 and timing.number == m.number and timing.samples == len(m.times)


def test_warmup_calls_are_not_timed():
    clock = FakeClock([1.0, 1.0, 0.01])  # two slow warm-up calls, then steady
    clock.steps = [1.0, 1.0] + [0.01] * 1000
    m = time_callable(clock.work, threads=1, min_block_s=0.0, budget_s=0.1, warmup=2, timer=clock.timer)
    assert m.median == pytest.approx(0.01)


def test_statistics_and_noise_flag():
    m = Measurement(times=[1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0], number=1, threads=1)
    assert m.median == 1.5
    assert m.iqr == pytest.approx(1.0)
    assert m.noisy
    quiet = Measurement(times=[1.0, 1.01, 0.99, 1.0, 1.02], number=1, threads=1)
    assert not quiet.noisy


def test_min_samples_even_when_budget_is_spent():
    clock = FakeClock([0.5])
    m = time_callable(clock.work, threads=1, min_block_s=0.0, budget_s=0.0, warmup=0, min_samples=5, timer=clock.timer)
    assert len(m.times) == 5


def test_peak_rss_sees_an_allocation_of_the_call_alone():
    import numpy as np

    def allocate():
        a = np.ones(64 * 1024 * 1024 // 8)  # 64 MiB touched
        return float(a.sum())

    result = peak_rss_of(allocate)
    assert result.method == "rss-hwm-clear_refs"
    assert 48 * 2**20 < result.peak_bytes < 256 * 2**20
    small = peak_rss_of(lambda: None)
    assert small.peak_bytes < 16 * 2**20
