"""harness.ops.grid_sample through the exporters: every opset 9..17 this torch writes, dynamic batch and
spatial axes checked in onnxruntime at two shapes other than the traced one, and the dynamo exporter.

Tolerance against native: 1e-5 abs + rel for float32 (torch's 2-D kernel fuses multiply-adds), exact for
nearest (on grids of binary fractions, so that fusing cannot flip a pick) and NaN positions identical.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from harness.ops import grid_sample
from harness.worker.export import dynamo_available, export_onnx
from harness.worker.fingerprint import max_opset

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed here")
onnx = pytest.importorskip("onnx", reason="onnx is not installed here")

TORCH_VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
OPSETS = [o for o in (9, 11, 13, 16, 17) if o <= max_opset("torchscript")]
# (rank, mode, padding, align_corners, channels): every padding under every mode across the list, both
# gather layouts (channels-first below 64 channels, rows from 64).
COMBOS = [
    (4, "bilinear", "zeros", False, 3),
    (4, "bilinear", "reflection", True, 64),
    (4, "bilinear", "border", False, 64),
    (4, "nearest", "border", False, 64),
    (4, "nearest", "reflection", True, 3),
    (4, "nearest", "zeros", True, 3),
    (4, "bicubic", "zeros", True, 3),
    (4, "bicubic", "border", False, 64),
    (4, "bicubic", "reflection", False, 3),
    (5, "bilinear", "zeros", True, 64),
    (5, "bilinear", "reflection", False, 3),
    (5, "nearest", "border", True, 3),
    (5, "nearest", "reflection", False, 64),
]
OLD_3D_NEAREST = TORCH_VERSION < (2, 1)  # rounds 3-D nearest ties away from zero (pytorch#97000)


class _Sampler(torch.nn.Module):
    def __init__(self, mode, padding, align):
        super().__init__()
        self.kwargs = dict(mode=mode, padding_mode=padding, align_corners=align)

    def forward(self, input, grid):
        return grid_sample(input, grid, **self.kwargs)


def _example(rank, channels, batch, spatial, points, seed, lattice):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn((batch, channels) + spatial, generator=gen)
    g = torch.rand((batch,) + points + (rank - 2,), generator=gen) * 3.2 - 1.6
    if lattice:
        g = torch.round(g * 64) / 64 + (1 / 128 if OLD_3D_NEAREST and rank == 5 else 0)
    g.view(-1)[0] = float("nan")
    return x, g


def _dynamic_axes(rank):
    return {
        "input": {0: "batch", **{i: f"in{i}" for i in range(2, rank)}},
        "grid": {0: "batch", **{i: f"out{i}" for i in range(1, rank - 1)}},
        "output": {0: "batch", **{i: f"out{i}" for i in range(2, rank)}},
    }


def _export_and_check(rank, mode, padding, align, channels, opset, exporter):
    spatial, points = ((5, 7), (3, 4)) if rank == 4 else ((3, 4, 5), (2, 3, 2))
    lattice = mode == "nearest"
    x, g = _example(rank, channels, 2, spatial, points, 0, lattice)
    blob = export_onnx(
        _Sampler(mode, padding, align),
        (x, g),
        opset=opset,
        exporter=exporter,
        input_names=["input", "grid"],
        output_names=["output"],
        dynamic_axes=_dynamic_axes(rank),
    )
    model = onnx.load_from_string(blob)
    ops = {node.op_type for node in model.graph.node}
    assert not ops & {"GridSample", "OneHot"}, ops  # no GridSample, and no OneHot-emulated gather
    if exporter == "torchscript":
        assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(blob, options, providers=["CPUExecutionProvider"])
    others = [
        (3, tuple(s + 2 for s in spatial), tuple(p + 3 for p in points)),
        (1, tuple(s + 1 for s in spatial[::-1]), tuple(reversed(points))),
    ]
    for seed, (batch, other_spatial, other_points) in enumerate(others, 1):
        x2, g2 = _example(rank, channels, batch, other_spatial, other_points, seed, lattice)
        (out,) = session.run(None, {"input": x2.numpy(), "grid": g2.numpy()})
        ref = F.grid_sample(x2, g2, mode=mode, padding_mode=padding, align_corners=align)
        _assert_matches(torch.from_numpy(out), ref, exact=mode == "nearest")


def _assert_matches(out, ref, exact):
    assert out.shape == ref.shape, (out.shape, ref.shape)
    nan_out, nan_ref = torch.isnan(out), torch.isnan(ref)
    assert torch.equal(nan_out, nan_ref)
    a, e = out[~nan_ref], ref[~nan_ref]
    if exact:
        assert torch.equal(a, e), (a - e).abs().max()
    else:
        assert ((a - e).abs() <= 1e-5 + 1e-5 * e.abs()).all(), (a - e).abs().max()


# Every combination at opset 9 (emulated Round and Mod, rows only) and the newest; a third of them between.
TORCHSCRIPT_CELLS = [
    (opset,) + combo
    for opset in OPSETS
    for k, combo in enumerate(COMBOS)
    if opset in (OPSETS[0], OPSETS[-1]) or k % 3 == OPSETS.index(opset) % 3
]


@pytest.mark.parametrize("opset,rank,mode,padding,align,channels", TORCHSCRIPT_CELLS)
def test_torchscript_export_runs_in_onnxruntime_at_other_shapes(opset, rank, mode, padding, align, channels):
    _export_and_check(rank, mode, padding, align, channels, opset, "torchscript")


DYNAMO_COMBOS = [COMBOS[0], COMBOS[5], COMBOS[8], COMBOS[11]]


@pytest.mark.parametrize("rank,mode,padding,align,channels", DYNAMO_COMBOS)
def test_dynamo_export_runs_in_onnxruntime_at_other_shapes(rank, mode, padding, align, channels):
    reason = dynamo_available()
    if reason:
        pytest.skip(reason)
    _export_and_check(rank, mode, padding, align, channels, 18, "dynamo")
