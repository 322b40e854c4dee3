"""harness.ops.affine_grid against torch's own: eager values and gradients, argument errors, and a spatial
transformer (affine_grid, then grid_sample) through the exporters, checked in onnxruntime at the traced shape
and at others (dynamic batch and spatial axes).

Tolerances (max abs, thetas uniform in [-1.5, 1.5] so grid values stay below 4.5): float32 1e-6 (our base
coordinates are correctly rounded, torch's linspace is off by an ulp here and there; seen 4.8e-7 eager,
2.4e-7 through onnxruntime), float64 1e-12. Sampled outputs 1e-5 (grid_sample scales a grid ulp by the
image size; seen 2.3e-6).
"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

from harness.judge.session import OrtSession
from harness.ops import affine_grid, grid_sample
from harness.worker.export import dynamo_available, export_onnx
from harness.worker.fingerprint import max_opset

onnx = pytest.importorskip("onnx", reason="onnx is not installed here")
pytest.importorskip("onnxruntime", reason="onnxruntime is not installed here")

TORCH_VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
OPSETS = [o for o in (11, 13, 16, 17, 20) if o <= max_opset("torchscript")]
TOLERANCE = {torch.float32: 1e-6, torch.float64: 1e-12}
EXPORT_SPATIAL = {4: (5, 7), 5: (3, 4, 5)}
# (batch, spatial) the exported graphs run at besides the traced one: non-square, and unit sizes
OTHER_SHAPES = {4: [(3, (8, 6)), (1, (1, 9))], 5: [(3, (4, 6, 2)), (1, (1, 3, 1))]}


def _theta(rank, batch, seed, dtype=torch.float32, near_identity=False):
    gen = torch.Generator().manual_seed(seed)
    shape = (batch, rank - 2, rank - 1)
    if near_identity:  # a transformer's usual theta: the sampled output stays mostly inside the image
        return torch.eye(rank - 2, rank - 1, dtype=dtype) + 0.3 * torch.randn(shape, generator=gen, dtype=dtype)
    return torch.rand(shape, generator=gen, dtype=dtype) * 3 - 1.5


def _max_diff(out, ref):
    assert out.shape == ref.shape, (out.shape, ref.shape)
    return (out - ref).abs().max().item()


# Eager -----------------------------------------------------------------------------------------------


def test_property_matches_torch_over_random_thetas_and_sizes():
    hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed here")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=120, deadline=None, derandomize=True, database=None)
    @hypothesis.given(
        rank=st.sampled_from([4, 5]),
        batch=st.integers(1, 3),
        sizes=st.lists(st.integers(1, 9), min_size=3, max_size=3),
        align=st.booleans(),
        dtype=st.sampled_from([torch.float32, torch.float64]),
        seed=st.integers(0, 2**16),
    )
    @hypothesis.example(rank=4, batch=2, sizes=[1, 5, 1], align=True, dtype=torch.float32, seed=1)
    @hypothesis.example(rank=4, batch=1, sizes=[4, 1, 1], align=False, dtype=torch.float32, seed=2)
    @hypothesis.example(rank=5, batch=2, sizes=[1, 1, 1], align=True, dtype=torch.float32, seed=3)
    def check(rank, batch, sizes, align, dtype, seed):
        size = (batch, 3) + tuple(sizes[: rank - 2])
        theta = _theta(rank, batch, seed, dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the unit-size warning, tested below
            out, ref = affine_grid(theta, size, align_corners=align), F.affine_grid(theta, size, align_corners=align)
        assert out.dtype == ref.dtype
        assert _max_diff(out, ref) <= TOLERANCE[dtype]

    check()


@pytest.mark.parametrize("rank", [4, 5])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradient_matches_torch(rank, align, dtype):
    size = (2, 3) + EXPORT_SPATIAL[rank]
    theta = _theta(rank, 2, 5, dtype)
    weight = torch.randn(size[:1] + size[2:] + (rank - 2,), generator=torch.Generator().manual_seed(6), dtype=dtype)
    grads = []
    for fn in (affine_grid, F.affine_grid):
        leaf = theta.clone().requires_grad_(True)
        (fn(leaf, size, align_corners=align) * weight).sum().backward()
        grads.append(leaf.grad)
    # sums over every point in another order: float32 agrees to about 1e-5 relative (seen 1e-5 at 16x16x16)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert torch.allclose(grads[0], grads[1], rtol=tol, atol=tol)


@pytest.mark.parametrize("rank", [4, 5])
def test_gradcheck(rank):
    theta = _theta(rank, 2, 7, torch.float64).requires_grad_(True)
    size = (2, 1) + EXPORT_SPATIAL[rank]
    assert torch.autograd.gradcheck(lambda t: affine_grid(t, size, align_corners=False), (theta,))


BAD_CALLS = [
    (torch.zeros(1, 2, 3, dtype=torch.int64), (1, 1, 4, 4), False),  # integer theta
    (torch.zeros(2, 3, 3), (2, 1, 4, 4), False),  # 3-D theta for a 4-D size
    (torch.zeros(2, 3), torch.Size((2, 1, 4, 4)), False),  # an unbatched theta
    (torch.zeros(2, 2, 3), (2, 1, 3, 4, 4), True),  # 2-D theta for a 5-D size
    (torch.zeros(2, 2, 3), [2, 1, 4], False),  # neither 4-D nor 5-D
    (torch.zeros(1, 2, 3), (1, 1, 0, 4), False),  # empty
    (torch.zeros(1, 3, 4), (1, 1, 2, 0, 4), True),
    (torch.zeros(2, 2, 3), (3, 1, 4, 5), False),  # size's batch is not theta's
    (torch.zeros(2, 3, 4), (1, 1, 2, 4, 5), True),
]


@pytest.mark.parametrize("theta,size,align", BAD_CALLS)
def test_argument_errors_match_torch(theta, size, align):
    with pytest.raises(Exception) as theirs:
        F.affine_grid(theta, size, align_corners=align)
    with pytest.raises(type(theirs.value)) as ours:
        affine_grid(theta, size, align_corners=align)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("size,align", [((1, 1, 4, 4), None), ((1, 1, 1, 4), True), ((1, 1, 2, 1, 3), True)])
def test_warnings_match_torch_and_point_at_the_caller(size, align):
    theta = _theta(len(size), 1, 0)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        F.affine_grid(theta, size, align_corners=align)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        affine_grid(theta, size, align_corners=align)
    assert [(w.category, str(w.message)) for w in ours] == [(w.category, str(w.message)) for w in theirs]
    assert ours and all(w.filename == __file__ for w in ours)


# Exports ---------------------------------------------------------------------------------------------


class _SpatialTransformer(torch.nn.Module):
    """The unmodified STN pattern, affine_grid swapped for ours; returns the grid too, to check it alone."""

    def __init__(self, align, sampler):
        super().__init__()
        self.align, self.sampler = align, sampler

    def forward(self, input, theta):
        grid = affine_grid(theta, input.size(), align_corners=self.align)
        return grid, self.sampler(input, grid, align_corners=self.align)


def _sampler(rank, opset):
    """torch's grid_sample where this torch exports it (4-D from opset 16, 5-D from opset 20 on 2.4+: 1.12
    writes 5-D into an invalid model), ours below."""
    native = (rank == 4 and opset >= 16) or (rank == 5 and opset >= 20 and TORCH_VERSION >= (2, 4))
    return F.grid_sample if native else grid_sample


def _dynamic_axes(rank):
    spatial = {i: f"s{i}" for i in range(2, rank)}
    return {
        "input": {0: "batch", **spatial},
        "theta": {0: "batch"},
        "grid": {0: "batch", **{i - 1: name for i, name in spatial.items()}},
        "output": {0: "batch", **spatial},
    }


def _export_and_check(rank, align, opset, exporter):
    spatial = EXPORT_SPATIAL[rank]
    x, theta = torch.randn((2, 3) + spatial), _theta(rank, 2, 0, near_identity=True)
    blob = export_onnx(
        _SpatialTransformer(align, _sampler(rank, opset)),
        (x, theta),
        opset=opset,
        exporter=exporter,
        input_names=["input", "theta"],
        output_names=["grid", "output"],
        dynamic_axes=_dynamic_axes(rank),
    )
    model = onnx.load_from_string(blob)
    assert "AffineGrid" not in {node.op_type for node in model.graph.node}  # opset 20's own op: not ours
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    session = OrtSession(blob, "cpu", threads=1)
    for seed, (batch, other) in enumerate([(2, spatial)] + OTHER_SHAPES[rank], 1):
        x2 = torch.randn((batch, 3) + other, generator=torch.Generator().manual_seed(seed))
        theta2 = _theta(rank, batch, seed, near_identity=True)
        grid, out = (torch.from_numpy(a) for a in session.run([x2, theta2]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unit sizes under align_corners=True
            ref_grid = F.affine_grid(theta2, x2.size(), align_corners=align)
        assert _max_diff(grid, ref_grid) <= 1e-6
        assert _max_diff(out, F.grid_sample(x2, ref_grid, align_corners=align)) <= 1e-5


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("rank", [4, 5])
@pytest.mark.parametrize("align", [False, True])
def test_torchscript_export_runs_in_onnxruntime_at_other_shapes(opset, rank, align):
    _export_and_check(rank, align, opset, "torchscript")


@pytest.mark.parametrize("rank,align", [(4, True), (5, False)])
def test_dynamo_export_runs_in_onnxruntime_at_other_shapes(rank, align):
    reason = dynamo_available()
    if reason:
        pytest.skip(reason)
    _export_and_check(rank, align, 18, "dynamo")


class _ThetaFromInput(torch.nn.Module):
    """theta computed from the input, as a localisation net does: its batch is the input's, symbolically."""

    def forward(self, x):
        identity = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0])
        theta = (x.flatten(1)[:, :6] * 0.1 + identity).view(-1, 2, 3)
        return affine_grid(theta, x.size(), align_corners=False)


def test_dynamo_keeps_a_batch_that_theta_derives_from_the_input_dynamic():
    reason = dynamo_available()
    if reason:
        pytest.skip(reason)
    model = _ThetaFromInput()
    blob = export_onnx(
        model,
        (torch.rand(2, 1, 6, 7),),
        opset=18,
        exporter="dynamo",
        input_names=["input"],
        output_names=["grid"],
        dynamic_axes={"input": {0: "batch"}, "grid": {0: "batch"}},
    )
    x3 = torch.rand(3, 1, 6, 7)
    (grid,) = OrtSession(blob, "cpu", threads=1).run([x3])
    assert _max_diff(torch.from_numpy(grid), model(x3)) <= 1e-6
