"""patched(): an unmodified model's torch functions routed through the named strategies, and put back after."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from harness.ops import NATIVE_AFFINE_GRID, NATIVE_GRID_SAMPLE, affine_grid, grid_sample, patched
from harness.strategies.routing import routes


def test_one_name_routes_every_operator_that_has_a_strategy_of_that_name():
    with patched("custom"):
        assert F.grid_sample is grid_sample and F.affine_grid is affine_grid
    assert F.grid_sample is NATIVE_GRID_SAMPLE and F.affine_grid is NATIVE_AFFINE_GRID
    assert set(routes("mmcv", None, {})) == {"grid_sample"}  # affine_grid has no mmcv: it stays torch's


def test_one_strategy_per_operator():
    chosen = routes(None, None, {"grid_sample": "contrib", "affine_grid": "custom"})
    assert {f: s.name for f, s in chosen.items()} == {"grid_sample": "contrib", "affine_grid": "custom"}
    with patched(grid_sample="native", affine_grid="custom"):
        assert F.grid_sample is NATIVE_GRID_SAMPLE and F.affine_grid is affine_grid
    assert {f: s.name for f, s in routes("contrib", "grid_sample", {}).items()} == {"grid_sample": "contrib"}


def test_bad_names_say_what_exists():
    with pytest.raises(ValueError, match="resize is not a routed family; use grid_sample, affine_grid"):
        routes(None, None, {"resize": "custom"})
    with pytest.raises(ValueError, match="no routed family has a strategy of that name"):
        routes("fastest", None, {})


def test_an_unmodified_spatial_transformer_runs_through_both_rewrites():
    theta = torch.tensor([[[0.9, 0.2, 0.1], [-0.1, 1.1, 0.0]]])
    x = torch.rand(1, 1, 8, 9)

    def stn(x):
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)

    expected = stn(x)
    with patched("custom"):
        got = stn(x)
    assert torch.allclose(got, expected, atol=1e-6)
