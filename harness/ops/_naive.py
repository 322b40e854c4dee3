"""The clamped-index bilinear rewrite that blog posts publish, kept to show its error in the matrix.

It clamps each corner index into the image instead of masking it, so zero padding silently becomes border
padding: exact for grids whose corners all lie inside, wrong (by up to a whole pixel value) near and beyond
the edges. 4-D bilinear only.
"""

from __future__ import annotations

import torch
from torch import Tensor


def naive_grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool = False,
) -> Tensor:
    """Bilinear sampling with corner indices clamped into range (the published shortcut)."""
    if mode != "bilinear" or input.dim() != 4:
        raise ValueError(f"naive_grid_sample supports 4-D bilinear only, got mode={mode!r}, {input.dim()}-D")
    n, c, h, w = input.shape
    gx, gy = grid[..., 0], grid[..., 1]
    if align_corners:
        x, y = (gx + 1) / 2 * (w - 1), (gy + 1) / 2 * (h - 1)
    else:
        x, y = ((gx + 1) * w - 1) / 2, ((gy + 1) * h - 1) / 2
    x0, y0 = torch.floor(x), torch.floor(y)
    wx, wy = x - x0, y - y0
    x0i, y0i = x0.long(), y0.long()
    x1i, y1i = (x0i + 1).clamp(0, w - 1), (y0i + 1).clamp(0, h - 1)
    x0i, y0i = x0i.clamp(0, w - 1), y0i.clamp(0, h - 1)
    flat = input.reshape(n, c, h * w)

    def corner(yi: Tensor, xi: Tensor) -> Tensor:
        index = (yi * w + xi).reshape(n, 1, -1).expand(n, c, yi[0].numel())
        return torch.gather(flat, 2, index).reshape(n, c, *yi.shape[1:])

    top = corner(y0i, x0i) * (1 - wx).unsqueeze(1) + corner(y0i, x1i) * wx.unsqueeze(1)
    bottom = corner(y1i, x0i) * (1 - wx).unsqueeze(1) + corner(y1i, x1i) * wx.unsqueeze(1)
    return top * (1 - wy).unsqueeze(1) + bottom * wy.unsqueeze(1)
