"""Eager parity of harness.ops.grid_sample with torch's own, and the naive rewrite's border error.

Tolerances (max abs difference against native on inputs ~N(0, 1)), eager:
- bit-exact (asserted): nearest; 5-D; 4-D bilinear in float32 (torch's compiled 2-D kernel fuses multiply-adds;
  we round its (g+1)*S/2-0.5 once through float64 and accumulate with addcmul, which fuses the same way).
- float32 4-D bicubic: 1e-5 abs + 1e-5 rel (seen: 3e-7 here, 1e-6 on 300-pixel images); the 5-D gathers
  summed by embedding_bag (>= 32 channels) likewise.
- float64: 1e-12 (the FMA story without a wider type to emulate it in; seen 5e-15).
- float16/bfloat16: we compute in float32 and round once, torch rounds every step: we equal native float32 on
  the upcast inputs to one ulp of the reduced type, and differ from native reduced by its own rounding
  error (measured up to 1.7e-2 for float16 and 1.6e-1 for bfloat16 here; asserted below 3e-2 and 2.5e-1;
  bfloat16 nearest can pick another pixel, as native rounds the coordinate to 8 bits first).
"""

from __future__ import annotations

import itertools
import math
import re
import warnings

import pytest
import torch
import torch.nn.functional as F

import harness.ops._grid_plan as plan_module
import harness.ops._grid_sample as gs_module
from harness.ops import grid_sample, naive_grid_sample

TORCH_VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
CASES = [
    (rank, mode, padding, align)
    for rank, mode, padding, align in itertools.product((4, 5), MODES, PADDINGS, (False, True))
    if not (rank == 5 and mode == "bicubic")
]
# 5-D nearest rounded half away from zero before torch 2.1 (pytorch#97000), and so does the rewrite there;
# 2-D was always half-to-even.
OLD_3D_NEAREST = TORCH_VERSION < (2, 1)


def _inputs(rank, channels=3, dtype=torch.float64, seed=0, lattice=False, lo=-1.6, hi=1.6):
    gen = torch.Generator().manual_seed(seed)
    spatial = (5, 7) if rank == 4 else (4, 5, 6)
    points = (6, 5) if rank == 4 else (3, 4, 5)
    x = torch.randn((2, channels) + spatial, generator=gen, dtype=torch.float64)
    g = torch.rand((2,) + points + (rank - 2,), generator=gen, dtype=torch.float64) * (hi - lo) + lo
    if lattice:  # multiples of 1/64: unnormalising is exact, so FMA or not cannot flip a nearest pick
        g = torch.round(g * 64) / 64
    g.view(-1)[:6] = torch.tensor([-1.0, 1.0, 0.0, -1.0, 1.0, 0.5], dtype=torch.float64)
    return x.to(dtype), g.to(dtype)


def _assert_close(actual, expected, atol, rtol, equal_nan=False):
    """torch.testing.assert_close arrived in torch 1.9; this is its core, kept for torch 1.8."""
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, (actual.shape, expected.shape)
    a, e = actual.double(), expected.double()
    nan_a, nan_e = torch.isnan(a), torch.isnan(e)
    assert torch.equal(nan_a, nan_e) if equal_nan else not nan_e.any(), "NaN positions differ"
    same = (a == e) | ((a - e).abs() <= atol + rtol * e.abs()) | (nan_a & nan_e)
    worst = (a - e).abs()[~same].max().item() if not same.all() else 0.0
    assert same.all(), f"{int((~same).sum())} of {same.numel()} elements differ, worst by {worst}"


def _both(x, g, mode, padding, align):
    kw = dict(mode=mode, padding_mode=padding, align_corners=align)
    return grid_sample(x, g, **kw), F.grid_sample(x, g, **kw)


def _assert_parity(out, ref, dtype, mode, rank, channels=3):
    assert out.shape == ref.shape and out.dtype == ref.dtype
    looped = channels < plan_module.EAGER_ROWS_MIN_CHANNELS  # per-tap gathers summed in torch's order
    fused_2d = rank == 4 and mode == "bilinear" and dtype == torch.float32  # we emulate its FMAs
    exact = mode == "nearest" or (rank == 5 and looped) or fused_2d
    if exact and not (mode == "nearest" and rank == 5 and OLD_3D_NEAREST):
        assert torch.equal(out, ref), (out - ref).abs().max()
        return
    atol = {torch.float32: 1e-5, torch.float64: 1e-12}[dtype]
    _assert_close(out, ref, atol=atol, rtol=atol)


@pytest.mark.parametrize("channels", [3, 40], ids=["gathers", "embedding-bag"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("rank,mode,padding,align", CASES)
def test_matches_native(rank, mode, padding, align, dtype, channels):
    x, g = _inputs(rank, channels, dtype, lattice=mode == "nearest")
    if mode == "nearest" and rank == 5 and OLD_3D_NEAREST:
        g = g + 1 / 128  # clear of exact ties (see OLD_3D_NEAREST)
    out, ref = _both(x, g, mode, padding, align)
    _assert_parity(out, ref, dtype, mode, rank, channels)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("rank,mode,padding,align", CASES[::2])
def test_reduced_precision_computes_in_float32(rank, mode, padding, align, dtype):
    x, g = _inputs(rank, 3, dtype, lattice=True)
    if mode == "nearest" and rank == 5 and OLD_3D_NEAREST:
        g = g + 1 / 128  # off the ties (exact in both types), which this torch rounds away from zero
    out = grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align)
    upcast = F.grid_sample(x.float(), g.float(), mode=mode, padding_mode=padding, align_corners=align)
    assert out.dtype == dtype
    ulp = 2.0 ** (-10 if dtype == torch.float16 else -7)
    _assert_close(out.float(), upcast, atol=ulp, rtol=ulp)
    if dtype == torch.bfloat16 and mode == "nearest":
        return  # native rounds the coordinate to 8 bits first and may pick another pixel altogether
    try:
        native = F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align)
    except RuntimeError as exc:  # torch 1.8 has no CPU kernel for reduced types
        pytest.skip(f"native grid_sample has no CPU {dtype} kernel in torch {torch.__version__}: {exc}")
    limit = 3e-2 if dtype == torch.float16 else 2.5e-1
    assert (out.float() - native.float()).abs().max() <= limit


@pytest.mark.parametrize("rank", [4, 5])
@pytest.mark.parametrize("align", [False, True])
def test_half_pixel_ties_round_to_even(rank, align):
    size = 9 if align else 8  # grid values for half-pixel coordinates are then exact binary fractions
    x = torch.arange(1.0, 1 + size ** (rank - 2)).reshape((1, 1) + (size,) * (rank - 2))
    pixel = torch.arange(-1.5, size + 1.0, 1.0)  # every half-pixel tie, inside and just outside
    norm = 2 * pixel / (size - 1) - 1 if align else (2 * pixel + 1) / size - 1
    g = norm.view(1, -1, 1).repeat(1, 1, rank - 2).view((1,) + (1,) * (rank - 3) + (-1, rank - 2))
    even = torch.tensor([math.floor(p) + math.floor(p) % 2 for p in pixel.tolist()])
    diagonal = sum(even.clamp(0, size - 1) * size**k for k in range(rank - 2)).float() + 1
    expected = {
        "zeros": torch.where((even >= 0) & (even < size), diagonal, torch.zeros(())),
        "border": diagonal,
    }
    away = rank == 5 and OLD_3D_NEAREST  # then the rewrite rounds as this torch does: away from zero
    for padding in PADDINGS:
        out = grid_sample(x, g, mode="nearest", padding_mode=padding, align_corners=align).flatten()
        if padding in expected and not away:
            assert torch.equal(out, expected[padding]), (padding, out, expected[padding])
        native = F.grid_sample(x, g, mode="nearest", padding_mode=padding, align_corners=align)
        assert torch.equal(out, native.flatten()), padding


SPECIALS = [float("nan"), float("inf"), -float("inf"), 1e30, -1e30, 3.0, -3.0, 1e6 + 0.5, 1.0, -1.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("rank,mode,padding,align", CASES)
def test_nan_inf_and_far_points_follow_native(rank, mode, padding, align, dtype):
    """torch 2-D: NaN/inf give NaN under zeros bilinear/bicubic, 0 under nearest; clipping sends NaN to 0.
    torch 3-D: out-of-range corners are skipped (NaN/inf give 0); clipping sends NaN to S-1."""
    size = (3, 4) if rank == 4 else (3, 4, 5)
    x = torch.arange(1.0, 1 + 2 * math.prod(size), dtype=dtype).view((1, 2) + size)
    specials = SPECIALS
    if mode == "nearest" and rank == 5 and OLD_3D_NEAREST:
        specials = SPECIALS[:3]  # the rest meet ties (or reflect 1e30) the way torch 2.x does, not this one
    rows = [[v] + [0.3] * (rank - 3) for v in specials] + [[0.3] * (rank - 3) + [v] for v in specials]
    g = torch.tensor(rows, dtype=dtype).view((1,) + (1,) * (rank - 3) + (-1, rank - 2))
    out, ref = _both(x, g, mode, padding, align)
    _assert_close(out, ref, atol=1e-5, rtol=1e-5, equal_nan=True)


@pytest.mark.parametrize("rank", [4, 5])
def test_border_and_far_outside_grids(rank):
    x, _ = _inputs(rank, 2, torch.float64)
    points = 9
    line = torch.linspace(-4.0, 4.0, points, dtype=torch.float64)
    g = torch.cartesian_prod(*([line] * (rank - 2))).view((1,) + (points,) * (rank - 2) + (rank - 2,))
    g = g.repeat((2,) + (1,) * (rank - 1))
    for mode, padding, align in itertools.product(MODES, PADDINGS, (False, True)):
        if rank == 5 and mode == "bicubic":
            continue
        if mode == "nearest" and rank == 5 and OLD_3D_NEAREST:
            continue  # this grid lands on exact ties
        out, ref = _both(x, g, mode, padding, align)
        _assert_close(out, ref, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("size", [1, 2])
@pytest.mark.parametrize("mode", MODES)
def test_one_and_two_pixel_axes(size, mode):
    x = torch.randn(1, 2, size, size + 1, dtype=torch.float64)
    g = torch.rand(1, 4, 3, 2, dtype=torch.float64) * 4 - 2
    for padding, align in itertools.product(PADDINGS, (False, True)):
        out, ref = _both(x, g, mode, padding, align)
        _assert_close(out, ref, atol=1e-12, rtol=1e-12)


def test_empty_batch_channels_and_points():
    for x, g in [
        (torch.randn(0, 3, 4, 5), torch.rand(0, 2, 2, 2)),
        (torch.randn(2, 0, 4, 5), torch.rand(2, 2, 2, 2)),
        (torch.randn(2, 3, 4, 5), torch.rand(2, 0, 2, 2)),
        (torch.randn(2, 3, 4, 5, 6), torch.rand(2, 1, 0, 2, 3)),
    ]:
        out, ref = _both(x, g, "bilinear", "zeros", False)
        assert out.shape == ref.shape


def test_non_contiguous_inputs():
    x = torch.randn(2, 4, 6, 3).permute(0, 3, 1, 2)  # channels-last storage
    g = (torch.rand(2, 2, 5, 4) * 2 - 1).permute(0, 2, 3, 1)[..., :2]
    for mode in MODES:
        out, ref = _both(x, g, mode, "reflection", False)
        _assert_close(out, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "graph_style,rows_from",
    [(False, 1), (False, 10_000), (True, 1), (True, 10_000)],
    ids=["eager-embedding-bag", "eager-gathers", "graph-rows-matmul", "graph-gather-elements"],
)
def test_every_gather_strategy_matches_native(monkeypatch, graph_style, rows_from):
    """Each strategy on the same small inputs; graph_style runs the exported graph's ops eagerly."""
    monkeypatch.setattr(plan_module, "EAGER_ROWS_MIN_CHANNELS", rows_from)
    monkeypatch.setattr(plan_module, "ROWS_MIN_CHANNELS", rows_from)
    if graph_style:
        monkeypatch.setattr(plan_module, "exporting", lambda: True)
    for rank, mode, padding, align in CASES:
        x, g = _inputs(rank, 3, torch.float64, lattice=mode == "nearest", seed=3)
        if mode == "nearest" and rank == 5 and OLD_3D_NEAREST:
            g = g + 1 / 128
        out, ref = _both(x, g, mode, padding, align)
        _assert_parity(out, ref, torch.float64, mode, rank, channels=10_000)


@pytest.mark.parametrize("chunk", [7, 40], ids=["point-slices", "batch-items"])
@pytest.mark.parametrize("rows_from", [1, 10_000], ids=["embedding-bag", "gathers"])
def test_chunked_sampling_matches_native(monkeypatch, chunk, rows_from):
    """Eager without autograd samples CHUNK_POINTS points at a time; make the chunks tiny."""
    monkeypatch.setattr(gs_module, "CHUNK_POINTS", chunk)
    monkeypatch.setattr(plan_module, "EAGER_ROWS_MIN_CHANNELS", rows_from)
    for rank, mode, padding, align in CASES:
        x, g = _inputs(rank, 3, torch.float64, lattice=mode == "nearest", seed=4)
        if mode == "nearest" and rank == 5 and OLD_3D_NEAREST:
            g = g + 1 / 128
        with torch.no_grad():
            out, ref = _both(x, g, mode, padding, align)
        _assert_parity(out, ref, torch.float64, mode, rank, channels=10_000)


def test_in_place_and_autograd_paths_give_identical_bits():
    for rank, mode, padding, align in CASES:
        x, g = _inputs(rank, 3, torch.float32, seed=5)
        with torch.no_grad():
            fast = grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align)
        watched = grid_sample(x.requires_grad_(), g, mode=mode, padding_mode=padding, align_corners=align)
        assert torch.equal(fast, watched.detach()), (rank, mode, padding, align)


# Gradients ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rank,mode,padding,align", [c for c in CASES if c[1] != "nearest"])
def test_gradcheck_float64(rank, mode, padding, align):
    gen = torch.Generator().manual_seed(7)
    spatial = (3, 4) if rank == 4 else (2, 3, 3)
    points = (1, 2, 2, 2) if rank == 4 else (1, 2, 2, 2, 3)
    x = torch.randn((1, 2) + spatial, generator=gen, dtype=torch.float64, requires_grad=True)
    g = (torch.rand(points, generator=gen, dtype=torch.float64) * 2.4 - 1.2).requires_grad_()

    def fn(a, b):
        return grid_sample(a, b, mode=mode, padding_mode=padding, align_corners=align)

    assert torch.autograd.gradcheck(fn, (x, g), eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("rank,mode,padding,align", CASES)
def test_gradients_match_native(rank, mode, padding, align):
    """Inputs and grids away from integer coordinates: there both are piecewise smooth and agree to 1e-10
    (float64). At exact integer coordinates and clip borders both take the same one-sided choice, checked
    in test_gradient_at_borders_is_zero_like_native."""
    x, g = _inputs(rank, 3, torch.float64, seed=11, lattice=mode == "nearest")
    if mode == "nearest" and rank == 5 and OLD_3D_NEAREST:
        g = g + 1 / 128
    grads = []
    for fn in (grid_sample, F.grid_sample):
        a, b = x.clone().requires_grad_(), g.clone().requires_grad_()
        out = fn(a, b, mode=mode, padding_mode=padding, align_corners=align)
        (out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view_as(out)).sum().backward()
        grads.append((a.grad, b.grad))
    _assert_close(grads[0][0], grads[1][0], atol=1e-10, rtol=1e-10)
    _assert_close(grads[0][1], grads[1][1], atol=1e-10, rtol=1e-10)


def test_gradient_at_borders_is_zero_like_native():
    x = torch.randn(1, 1, 4, 4, dtype=torch.float64)
    for align in (False, True):
        edge = 1.0 if align else 1.0 - 1 / 4  # exactly on the last pixel centre
        g = torch.tensor([[[[edge, 0.1], [-edge, 0.2], [1.7, -1.9]]]], dtype=torch.float64)
        for padding in ("border", "reflection"):
            grads = []
            for fn in (grid_sample, F.grid_sample):
                b = g.clone().requires_grad_()
                fn(x, b, padding_mode=padding, align_corners=align).sum().backward()
                grads.append(b.grad)
            _assert_close(grads[0], grads[1], atol=1e-12, rtol=0)
            assert torch.all(grads[0][..., :2, 0] == 0), (padding, align)  # the two points on the rim


@pytest.mark.skipif(not hasattr(torch, "compile"), reason=f"torch {torch.__version__} has no torch.compile")
def test_gradient_at_borders_under_torch_compile():
    """torch.compile counts as a graph for the op (cheaper clamps), but autograd still needs torch's rule."""
    torch._dynamo.reset()
    compiled = torch.compile(grid_sample, backend="aot_eager", dynamic=False)
    x = torch.randn(1, 1, 4, 4, dtype=torch.float64)
    g = torch.tensor([[[[-1.0, -1.0], [1.0, 1.0], [0.3, -0.2]]]], dtype=torch.float64)
    for padding in ("border", "reflection"):
        grads = []
        for fn in (compiled, F.grid_sample):
            b = g.clone().requires_grad_()
            fn(x, b, padding_mode=padding, align_corners=True).sum().backward()
            grads.append(b.grad)
        _assert_close(grads[0], grads[1], atol=1e-12, rtol=0)


# Argument errors -------------------------------------------------------------------------------------


def test_argument_errors_mirror_torch():
    x, g = torch.randn(1, 2, 3, 4), torch.rand(1, 3, 3, 2)
    cases = [
        ((x, g), dict(mode="area"), ValueError, "expected mode to be 'bilinear', 'nearest' or 'bicubic'"),
        ((x, g), dict(padding_mode="wrap"), ValueError, "expected padding_mode to be 'zeros', 'border'"),
        ((x, torch.rand(1, 3, 3, 3)), {}, RuntimeError, "expected grid to have size 2 in last dimension"),
        ((x, torch.rand(2, 3, 3, 2)), {}, RuntimeError, "expected grid and input to have same batch size"),
        ((x, torch.rand(1, 3, 3, 3, 2)), {}, RuntimeError, "expected 4D input and grid with same number"),
        ((torch.randn(1, 2, 3), torch.rand(1, 3, 1)), {}, RuntimeError, "expected 5D input and grid"),
        ((torch.randn(1, 2, 0, 4), g), {}, RuntimeError, "expected input to have non-empty spatial"),
        (
            (torch.randn(1, 2, 3, 4, 5), torch.rand(1, 2, 2, 2, 3)),
            dict(mode="bicubic"),
            RuntimeError,
            "bicubic interpolation only supports 4D input",
        ),
        ((x, g.double()), {}, RuntimeError, "same dtype"),
    ]
    for (a, b), kw, err, message in cases:
        with pytest.raises(err, match=re.escape(message)):
            grid_sample(a, b, align_corners=False, **kw)
        with pytest.raises(err):  # native raises the same type
            F.grid_sample(a, b, align_corners=False, **kw)


def test_align_corners_none_warns_and_means_false():
    x, g = _inputs(4, 2, torch.float64)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        out = grid_sample(x, g)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.equal(out, grid_sample(x, g, align_corners=False))


# The naive clamped-index rewrite ----------------------------------------------------------------------


@pytest.mark.parametrize("align", [False, True])
def test_naive_rewrite_is_exact_inside(align):
    x = torch.randn(2, 3, 8, 9, dtype=torch.float64)
    margin_x, margin_y = (0.0, 0.0) if align else (1 / 9, 1 / 8)  # pixel centres of the outer ring
    g = torch.rand(2, 5, 6, 2, dtype=torch.float64)
    g[..., 0] = g[..., 0] * 2 * (1 - margin_x) - (1 - margin_x)
    g[..., 1] = g[..., 1] * 2 * (1 - margin_y) - (1 - margin_y)
    ref = F.grid_sample(x, g, align_corners=align)
    _assert_close(naive_grid_sample(x, g, align_corners=align), ref, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("align", [False, True])
def test_naive_rewrite_turns_zeros_into_border(align):
    x = torch.rand(1, 1, 4, 4, dtype=torch.float64) + 1  # strictly positive, so zeros are visible
    g = torch.tensor([[[[-1.0, 0.0], [1.0, 0.0], [1.6, 0.3], [-3.0, -3.0]]]], dtype=torch.float64)
    native = F.grid_sample(x, g, align_corners=align)
    naive = naive_grid_sample(x, g, align_corners=align)
    border = F.grid_sample(x, g, padding_mode="border", align_corners=align)
    assert (naive - native).abs()[..., 2:].min() > 0.5  # beyond the edge: native reads zeros, naive the rim
    _assert_close(naive, border, atol=1e-12, rtol=1e-12)
    _assert_close(grid_sample(x, g, align_corners=align), native, atol=1e-12, rtol=1e-12)


def test_naive_rewrite_refuses_other_modes():
    with pytest.raises(ValueError, match="4-D bilinear only"):
        naive_grid_sample(torch.randn(1, 1, 2, 2), torch.rand(1, 1, 1, 2), mode="nearest")


# ONNX's reference implementation, and properties ------------------------------------------------------


@pytest.mark.parametrize("rank,mode,padding,align", CASES)
def test_matches_onnx_reference_gridsample(rank, mode, padding, align):
    reference = pytest.importorskip("onnx.reference", reason="onnx.reference arrived in onnx 1.13")
    from onnx import TensorProto, helper

    if mode == "bicubic" and padding == "border":
        pytest.skip("ONNX's reference pads bicubic taps unlike torch (the onnxruntime#10607 family)")
    x, g = _inputs(rank, 2, torch.float32, seed=2)  # off the lattice: the reference reflects ties its own way
    names = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}  # opset-20 spelling
    node = helper.make_node(
        "GridSample", ["X", "G"], ["Y"], mode=names[mode], padding_mode=padding, align_corners=int(align)
    )
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("X", "G", "Y")]
    model = helper.make_model(
        helper.make_graph([node], "g", io[:2], io[2:]), opset_imports=[helper.make_opsetid("", 20)]
    )
    expected = reference.ReferenceEvaluator(model).run(None, {"X": x.numpy(), "G": g.numpy()})[0]
    out = grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align)
    _assert_close(out, torch.from_numpy(expected), atol=1e-5, rtol=1e-5)


def test_property_random_shapes_and_grids():
    hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed here")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=60, deadline=None, derandomize=True)
    @hypothesis.given(
        case=st.sampled_from(CASES),
        n=st.integers(1, 2),
        c=st.integers(1, 18),
        sizes=st.lists(st.integers(1, 6), min_size=6, max_size=6),
        ticks=st.lists(st.integers(-160, 160), min_size=1, max_size=48),
        seed=st.integers(0, 2**16),
    )
    def check(case, n, c, sizes, ticks, seed):
        rank, mode, padding, align = case
        spatial, points = tuple(sizes[: rank - 2]), tuple(sizes[3 : 3 + rank - 2])
        count = n * math.prod(points) * (rank - 2)
        values = torch.tensor((ticks * count)[:count], dtype=torch.float64) / 64  # a lattice of 1/64
        if mode == "nearest" and rank == 5 and OLD_3D_NEAREST:
            values = values + 1 / 128
        g = values.view((n,) + points + (rank - 2,))
        x = torch.randn((n, c) + spatial, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        out, ref = _both(x, g, mode, padding, align)
        _assert_parity(out, ref, torch.float64, mode, rank)

    check()
