from __future__ import annotations

import numpy as np

from harness.judge.parity import compare, describe_mismatch, merge


def test_exact_and_close_and_far():
    a = np.array([1.0, 2.0, 3.0])
    assert compare(a, a, 1e-4, 1e-4)["ok"]
    near = compare(a + 1e-5, a, 1e-4, 1e-4)
    assert near["ok"] and near["max_abs"] > 0
    far = compare(a + 0.1, a, 1e-4, 1e-4)
    assert not far["ok"]
    assert abs(far["min_passing_atol"] - (0.1 - 1e-4 * 1.0)) < 1e-9
    assert "exceeds atol" in describe_mismatch(far, "x")


def test_nan_must_match_nan():
    a = np.array([np.nan, 1.0])
    assert compare(a, a, 1e-4, 1e-4)["ok"]
    result = compare(np.array([0.0, 1.0]), a, 1e-4, 1e-4)
    assert not result["ok"] and "NaN" in result["note"]


def test_shape_and_count_mismatch():
    assert "shape" in compare(np.zeros(3), np.zeros(4), 1, 1)["note"]
    assert "outputs" in compare([np.zeros(3)], [np.zeros(3), np.zeros(3)], 1, 1)["note"]


def test_merge_keeps_the_worst():
    ok = compare(np.zeros(2), np.zeros(2), 1e-4, 1e-4)
    bad = compare(np.ones(2), np.zeros(2), 1e-4, 1e-4)
    merged = merge([ok, bad, ok])
    assert not merged["ok"] and merged["max_abs"] == 1.0 and merged["shapes_checked"] == 3
