"""harness.ops.lean_export: the same graph's outputs from fewer traced nodes, and torch's passes restored after."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import torch

from harness.ops import grid_sample, lean_export


class Warp(torch.nn.Module):
    def forward(self, image, grid):
        out = image
        for _ in range(3):  # the same rewrite three times over: its scalar constants repeat
            out = grid_sample(out, grid, mode="bilinear", padding_mode="zeros", align_corners=True)
        return out


def _export(model, args):
    buffer = io.BytesIO()
    kwargs = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
    torch.onnx.export(model, args, buffer, opset_version=16, input_names=["image", "grid"], **kwargs)
    return buffer.getvalue()


def test_lean_export_keeps_the_outputs_and_restores_torch():
    gen = torch.Generator().manual_seed(0)
    args = (torch.randn(1, 3, 9, 11, generator=gen), torch.rand(1, 5, 7, 2, generator=gen) * 2.4 - 1.2)
    original = torch._C._jit_pass_lower_all_tuples
    plain = _export(Warp(), args)
    with lean_export():
        assert torch._C._jit_pass_lower_all_tuples is not original
        lean = _export(Warp(), args)
    assert torch._C._jit_pass_lower_all_tuples is original
    feeds = {"image": args[0].numpy(), "grid": args[1].numpy()}
    outputs = [ort.InferenceSession(blob).run(None, feeds)[0] for blob in (plain, lean)]
    np.testing.assert_allclose(outputs[0], outputs[1], rtol=0, atol=1e-6)
    np.testing.assert_allclose(outputs[1], Warp()(*args).numpy(), rtol=1e-4, atol=1e-5)
    assert len(onnx.load_from_string(lean).graph.node) <= len(onnx.load_from_string(plain).graph.node)
