"""Cases that misbehave on purpose, to prove one bad cell costs that cell only."""

import os
import signal
import time

import torch

from harness import register_case


def _inputs(params, shape, gen):
    return (torch.randn(1, 1, 4, 4, generator=gen), torch.rand(1, 3, 3, 2, generator=gen) * 2 - 1)


class Behaviour(torch.nn.Module):
    def __init__(self, op, what):
        super().__init__()
        self.op, self.what = op, what

    def forward(self, x, grid):
        if self.what == "segfault":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif self.what == "hang":
            time.sleep(600)
        elif self.what == "hog":
            big = torch.empty(8 * 1024**3, dtype=torch.uint8)
            big.fill_(1)
        return self.op(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def _register(what, description):
    @register_case(
        f"faulty_{what}",
        family="grid_sample",
        inputs=_inputs,
        exporters=("torchscript",),
        opsets=(16,),
        tags=("faulty",),
    )
    def factory(params, op):
        return Behaviour(op, what)

    factory.__doc__ = description


_register("segfault", "kills its own process with SIGSEGV")
_register("hang", "sleeps far past any limit")
_register("hog", "allocates 8 GiB")
_register("fine", "behaves")


def _broken_inputs(params, shape, gen):
    raise KeyError("a bug in the case's own code")


@register_case(
    "faulty_harness_bug",
    family="grid_sample",
    inputs=_broken_inputs,
    exporters=("torchscript",),
    opsets=(16,),
    tags=("faulty",),
)
def harness_bug(params, op):
    """its inputs function raises: our bug, not the strategy's"""
    return Behaviour(op, "fine")
