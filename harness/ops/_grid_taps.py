"""Gathering and summing the taps of `grid_sample`: flat indices into the zero-framed input, the corners
of bi/trilinear and the rows of bicubic, and the readers of each layout (see `_grid_sample`)."""

from __future__ import annotations

import itertools
from typing import List, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from harness.ops._grid_coords import Axis, Size, const
from harness.ops._grid_plan import Plan


def combine(indices: List[Tensor], padded: Sequence[Size], offset: Optional[Tensor], plan: Plan) -> Tensor:
    """Row-major flat index ((z * H' + y) * W' + x) into the framed input, plus the batch offset of the
    rows layout; the frame shifts every axis by `pad`, added here once."""
    flat = indices[0] if offset is None else indices[0] + offset
    for index, stride in zip(indices[1:], padded[::-1][1:]):
        flat = flat.mul_(stride).add_(index) if plan.inplace else flat * stride + index
    shift = plan.pad * sum(numel(padded[:k]) for k in range(len(padded)))  # pad * (1 + W' + H'W')
    return flat.add_(shift) if plan.inplace else flat + shift


class Corners:
    """Bi/trilinear taps in torch's corner order (t/b, n/s, w/e): index = base + step, weight = product.
    With `reuse`, every corner is computed into the same two buffers (consume each before the next)."""

    def __init__(self, order: List[Axis], padded, reader: Reader, plan: Plan, reuse: bool) -> None:
        self.base = combine([a.taps[0] for a in order], padded, reader.offset, plan)
        self.units = [numel(padded[:k]) for k in range(len(padded))][::-1]  # H'W'?, W', 1
        self.order, self.reuse = order, reuse

    def _corners(self):
        for bits in itertools.product((0, 1), repeat=len(self.order)):
            step = sum(u for b, u in zip(bits, self.units) if b)
            yield bits, step, [a.weights[b] for a, b in zip(self.order[::-1], bits[::-1])]  # x, y[, z]

    def offsets(self):
        """(step, weight) per corner, for graphs that add every step to `base` in one broadcast."""
        for _, step, factors in self._corners():
            weight = factors[0] * factors[1]
            for f in factors[2:]:
                weight = weight * f
            yield step, weight

    def __iter__(self):
        index_buffer = weight_buffer = None
        for bits, step, factors in self._corners():
            if self.reuse:
                index = torch.add(self.base, step, out=index_buffer) if any(bits) else self.base
                index_buffer = index if any(bits) else index_buffer
                weight = weight_buffer = torch.mul(factors[0], factors[1], out=weight_buffer)
                for f in factors[2:]:
                    weight.mul_(f)
            else:
                index = self.base + step if any(bits) else self.base
                weight = factors[0] * factors[1]
                for f in factors[2:]:
                    weight = weight * f  # (wx * wy) * wz, torch's product order
            yield index, weight


def cubic_rows(y: Axis, x: Axis, width: Size, reader: Reader):
    """Bicubic: per y tap, its four x taps with the x coefficients, and the row's y coefficient."""
    rows = []
    for row in range(4):
        start = y.taps[row] if reader.offset is None else y.taps[row] + reader.offset
        start = start * width + reader.pad * (width + 1)  # the frame shift of both axes
        rows.append((list(zip([start + tap for tap in x.taps], x.weights)), y.weights[row]))
    return rows


def weighted(row, row_weight: Optional[Tensor]):
    for index, weight in row:
        yield index, weight if row_weight is None else weight * row_weight


def loop_sum(rows, reader: Reader, plan: Plan) -> Tensor:
    """One gather per tap, summed left to right as torch does (rows of bicubic taps first)."""
    total = _Sum(plan)
    for row, row_weight in rows:
        line = _Sum(plan)
        for index, weight in row:
            line.add(reader.read(index, line.spare()), reader.spread(weight))
        if row_weight is None:
            return line.result()
        total.add(line.result(), reader.spread(row_weight))
    return total.result()


class _Sum:
    """Left-to-right sum of value * weight; in place, on one reused scratch buffer, when allowed."""

    def __init__(self, plan: Plan) -> None:
        # torch's 2-D kernel compiles to fused multiply-adds, its 3-D kernel does not: so does this sum
        # (graphs spell addcmul as two multiplies and an add, so they keep the plain form)
        self.inplace, self.fused = plan.inplace, not plan.volumetric and not plan.exporting
        self.total: Optional[Tensor] = None
        self.scratch: Optional[Tensor] = None

    def spare(self) -> Optional[Tensor]:
        return self.scratch if self.inplace and self.total is not None else None

    def add(self, value: Tensor, weight: Tensor) -> None:
        if self.total is None:
            self.total = value.mul_(weight) if self.inplace else value * weight
        elif self.inplace:
            if self.fused:
                self.total.addcmul_(value, weight)  # also one pass instead of two
            else:
                self.total.add_(value.mul_(weight))
            self.scratch = value
        elif self.fused:
            self.total = torch.addcmul(self.total, value, weight)
        else:
            self.total = self.total + value * weight

    def result(self) -> Tensor:
        assert self.total is not None
        return self.total


class Reader:
    """Tap values from the zero-framed input: channels-first `gather` or channels-last row `index_select`."""

    def __init__(self, input: Tensor, padded: Sequence[Size], plan: Plan) -> None:
        n, c = input.shape[0], input.shape[1]
        frames = (plan.pad,) * (2 * len(padded))
        self.frame, self.slowest = numel(padded), padded[-1]
        self.layout, self.exporting, self.c, self.pad = plan.layout, plan.exporting, c, plan.pad
        self.index_dtype = plan.index_dtype
        self.batch = n
        if self.layout == "rows":  # pad channels-first, then one (C, L) -> (L, C) transpose: fastest
            self.whole = F.pad(input, frames).reshape(n, c, self.frame).transpose(1, 2).reshape(n * self.frame, c)
        else:
            self.whole = F.pad(input, frames).reshape(n, c, self.frame)

    def focus(self, n0: Size, n1: Size, points: Sequence[Size]) -> Reader:
        """Read for batch items n0..n1 at points of this shape (the whole batch unless chunking)."""
        n, p = n1 if n0 == 0 else n1 - n0, numel(points)
        self.n, self.points = n, tuple(points)
        self.offset: Optional[Tensor] = None
        full = isinstance(n1, Tensor) or (n0, n1) == (0, self.batch)  # sizes are tensors while tracing
        if self.layout == "rows":
            self.table = self.whole if full else self.whole[n0 * self.frame : n1 * self.frame]
            self.index_shape, self.weight_shape = (n * p,), (n * p, 1)
            batch = torch.arange(n, device=self.whole.device).to(self.index_dtype)  # opset 9 ranges in int64
            batch = batch.view((-1,) + (1,) * len(self.points))
            self.offset = batch * self.slowest  # on the slowest axis, so it scales to n * frame
        else:
            self.table = self.whole if full else self.whole[n0:n1]
            self.index_shape, self.weight_shape, self.expanded = (n, 1, p), (n, 1, p), (n, self.c, p)
        return self

    def read(self, flat: Tensor, out: Optional[Tensor] = None) -> Tensor:
        index = flat.reshape(self.index_shape)
        if self.layout == "rows":
            return torch.index_select(self.table, 0, index, out=out)
        return torch.gather(self.table, 2, index.expand(self.expanded), out=out)

    def spread(self, w: Tensor) -> Tensor:
        return w.reshape(self.weight_shape)

    def weighted_sum(self, terms, base: Optional[Tensor] = None) -> Tensor:
        """These taps in one embedding_bag (eager rows), one Gather and a batched MatMul (graph rows, where
        it beats per-tap Mul and Add by a third), or one GatherElements (graph channels-first). Terms are
        (index, weight), or (step, weight) with the `base` index every step is added to."""
        indices, weights = zip(*terms)
        k = len(indices)
        if base is not None:  # one Add broadcasts base x steps x channels: no Concat, no Expand
            steps = torch.stack([const(step, base) for step in indices]).view(1, 1, k, 1)
            index = (base.reshape(self.n, 1, 1, -1) + steps.expand(1, self.c, k, 1)).reshape(self.n, self.c, -1)
            values = torch.gather(self.table, 2, index)
            weight = torch.stack([w.reshape(self.index_shape) for w in weights], 2)  # (N, 1, K, P)
            return (values.reshape(self.expanded[:2] + (k,) + self.expanded[2:]) * weight).sum(2)
        if self.layout == "rows":
            index = torch.stack([i.reshape(self.index_shape) for i in indices], 1)  # (rows, K)
            weight = torch.stack([w.reshape(self.index_shape) for w in weights], 1)
            if not self.exporting:
                return F.embedding_bag(index, self.table, mode="sum", per_sample_weights=weight)
            values = torch.index_select(self.table, 0, index.reshape(-1)).reshape(-1, k, self.c)
            return torch.matmul(weight.unsqueeze(1), values).reshape(-1, self.c)
        index = torch.cat([i.reshape(self.index_shape) for i in indices], 2)  # (N, 1, K * P)
        values = torch.gather(self.table, 2, index.expand(self.n, self.c, index.shape[2]))
        weight = torch.stack([w.reshape(self.index_shape) for w in weights], 2)  # (N, 1, K, P)
        return (values.reshape(self.expanded[:2] + (k,) + self.expanded[2:]) * weight).sum(2)

    def finish(self, out: Tensor) -> Tensor:
        if self.layout != "rows":
            return out.reshape((self.n, self.c) + self.points)
        last = len(self.points) + 1  # channels-last to first as the final op: its output is the result
        out = out.reshape((self.n,) + self.points + (self.c,)).permute((0, last) + tuple(range(1, last)))
        return out.contiguous()


def numel(shape: Sequence[Size]) -> Size:
    total: Size = 1
    for s in shape:
        total = total * s
    return total
