"""A model that bakes its batch size into the graph while tracing: it runs only at the export shape."""

import torch

from harness import register_case


class Baked(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x, grid):
        out = self.op(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        batch = int(out.shape[0])  # int() freezes the traced size into a constant
        return out.reshape(batch, -1)


def _inputs(params, shape, gen):
    n = shape["N"]
    return (torch.randn(n, 2, 6, 6, generator=gen), torch.rand(n, 4, 4, 2, generator=gen) * 2 - 1)


@register_case(
    "baked_batch",
    family="grid_sample",
    inputs=_inputs,
    shapes=[{"N": 2}, {"N": 3}, {"N": 1}],
    input_names=("input", "grid"),
    exporters=("torchscript",),
    opsets=(16,),
    dynamic_axes={"input": {0: "n"}, "grid": {0: "n"}, "output": {0: "n"}},
    shape_modes=("dynamic",),
    tags=("baked",),
)
def baked(params, op):
    """reshape with a Python int taken from a traced shape"""
    return Baked(op)
