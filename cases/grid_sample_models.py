"""grid_sample inside real models: an optical-flow backward warp (RAFT, PWC-Net), a deformable sampling block
(Deformable DETR's PyTorch fallback, DCN-style offsets), and torchvision's own tensor rotate/affine, unmodified."""

from __future__ import annotations

import importlib.util
from typing import Any, Dict, Tuple

import torch
from torch import nn

from harness import register_case

MODEL_OPSETS = (11, 16)  # below GridSample (rewrites only) and its first opset; the newest is added
MODEL_SHAPES = ({"N": 2, "H": 16, "W": 20}, {"N": 1, "H": 11, "W": 26}, {"N": 3, "H": 21, "W": 13})
FLOW_AXES = {
    "image": {0: "batch", 2: "height", 3: "width"},
    "flow": {0: "batch", 2: "height", 3: "width"},
    "output": {0: "batch", 2: "height", 3: "width"},
}
FLOW_PARAMS = ({"mode": "bilinear", "padding_mode": "zeros", "align_corners": True},)


def pixel_grid(n: Any, h: Any, w: Any, like: torch.Tensor) -> torch.Tensor:
    """(n, h, w, 2) pixel coordinates (x, y), built from the sizes so a dynamic export stays dynamic."""
    xs = torch.arange(w, device=like.device).to(like.dtype).view(1, 1, -1, 1).expand(n, h, w, 1)
    ys = torch.arange(h, device=like.device).to(like.dtype).view(1, -1, 1, 1).expand(n, h, w, 1)
    return torch.cat([xs, ys], dim=-1)


class FlowWarp(nn.Module):
    """Backward warp of `image` by `flow` as RAFT's `bilinear_sampler` and PWC-Net's `warp` do it:
    base pixel grid + flow, normalised with align_corners=True, then grid_sample."""

    def __init__(self, op: Any, params: Dict[str, Any]) -> None:
        super().__init__()
        self.op = op
        self.mode, self.padding_mode = params["mode"], params["padding_mode"]

    def forward(self, image: torch.Tensor, flow: torch.Tensor) -> torch.Tensor:
        n, h, w = image.shape[0], image.shape[2], image.shape[3]
        coords = pixel_grid(n, h, w, image) + flow.permute(0, 2, 3, 1)
        gx, gy = coords.split([1, 1], dim=-1)
        grid = torch.cat([2 * gx / (w - 1) - 1, 2 * gy / (h - 1) - 1], dim=-1)
        return self.op(image, grid, mode=self.mode, padding_mode=self.padding_mode, align_corners=True)


def flow_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor, ...]:
    n, h, w = shape["N"], shape["H"], shape["W"]
    image = torch.randn(n, 3, h, w, generator=gen)
    flow = torch.randn(n, 2, h, w, generator=gen) * 3  # some samples land beyond the borders
    return image, flow


@register_case(
    "flow_warp",
    family="grid_sample",
    inputs=flow_inputs,
    params=FLOW_PARAMS,
    shapes=MODEL_SHAPES,
    input_names=("image", "flow"),
    dynamic_axes=FLOW_AXES,
    exporters=("torchscript",),
    opsets=MODEL_OPSETS,
    tags=("model", "optical_flow"),
)
def flow_warp(params: Dict[str, Any], op: Any) -> nn.Module:
    """Optical-flow backward warp (RAFT / PWC-Net): pixel grid + flow, align_corners=True, any image size."""
    return FlowWarp(op, params)


@register_case(
    "flow_warp_dynamo",
    family="grid_sample",
    inputs=flow_inputs,
    params=FLOW_PARAMS,
    shapes=MODEL_SHAPES,
    input_names=("image", "flow"),
    dynamic_axes=FLOW_AXES,
    exporters=("dynamo",),
    shape_modes=("dynamic",),
    opsets=(18,),  # dynamo's own opset and the newest; below 18 it drifts (see grid_sample_dynamic)
    tags=("model", "optical_flow", "exporter"),
)
def flow_warp_dynamo(params: Dict[str, Any], op: Any) -> nn.Module:
    """The optical-flow warp through the dynamo exporter with dynamic batch and size (dynamic_shapes)."""
    return FlowWarp(op, params)


class DeformableSampling(nn.Module):
    """A conv predicts K offsets per pixel; the input is sampled at each offset location with grid_sample
    (align_corners=False, zeros, as Deformable DETR's `ms_deform_attn_core_pytorch`) and a 1x1 conv fuses
    the K samples."""

    POINTS = 4

    def __init__(self, op: Any, params: Dict[str, Any], channels: int = 4) -> None:
        super().__init__()
        self.op = op
        self.mode, self.padding_mode = params["mode"], params["padding_mode"]
        torch.manual_seed(0)
        self.offsets = nn.Conv2d(channels, 2 * self.POINTS, 3, padding=1)
        self.fuse = nn.Conv2d(channels * self.POINTS, channels, 1)
        with torch.no_grad():  # offsets of a few pixels, some reaching past the borders
            self.offsets.weight.mul_(4.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape[0], x.shape[1], x.shape[2], x.shape[3]
        k = self.POINTS
        offsets = self.offsets(x).view(n, k, 2, h, w).permute(0, 1, 3, 4, 2)
        pos = pixel_grid(n, h, w, x).unsqueeze(1) + offsets  # (n, k, h, w, 2) in pixels
        gx, gy = pos.split([1, 1], dim=-1)
        grid = torch.cat([(2 * gx + 1) / w - 1, (2 * gy + 1) / h - 1], dim=-1).reshape(n, k * h, w, 2)
        sampled = self.op(x, grid, mode=self.mode, padding_mode=self.padding_mode, align_corners=False)
        return self.fuse(sampled.reshape(n, c * k, h, w))


def deformable_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor]:
    return (torch.randn(shape["N"], 4, shape["H"], shape["W"], generator=gen),)


@register_case(
    "deformable_sampling",
    family="grid_sample",
    inputs=deformable_inputs,
    params=({"mode": "bilinear", "padding_mode": "zeros", "align_corners": False},),
    shapes=MODEL_SHAPES,
    input_names=("input",),
    dynamic_axes={"input": {0: "batch", 2: "height", 3: "width"}, "output": {0: "batch", 2: "height", 3: "width"}},
    exporters=("torchscript",),
    opsets=MODEL_OPSETS,
    tags=("model", "deformable"),
)
def deformable_sampling(params: Dict[str, Any], op: Any) -> nn.Module:
    """Deformable sampling: a conv predicts 4 offsets per pixel, grid_sample reads them, a 1x1 conv fuses."""
    return DeformableSampling(op, params)


class TorchvisionTransform(nn.Module):
    """torchvision.transforms.functional.rotate / affine on a tensor batch, as a data pipeline calls them."""

    def __init__(self, op: Any, params: Dict[str, Any]) -> None:
        super().__init__()
        self.op = op
        self.transform, self.mode = params["transform"], params["mode"]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms import functional as TF

        mode = InterpolationMode.BILINEAR if self.mode == "bilinear" else InterpolationMode.NEAREST
        if self.transform == "rotate":  # torchvision calls grid_sample itself: the strategy's routing applies
            return TF.rotate(x, 30.0, interpolation=mode)
        return TF.affine(x, angle=15.0, translate=[3, -2], scale=1.1, shear=[10.0, 0.0], interpolation=mode)


def image_inputs(params: Dict[str, Any], shape: Dict[str, int], gen: torch.Generator) -> Tuple[torch.Tensor]:
    return (torch.rand(shape["N"], 3, shape["H"], shape["W"], generator=gen),)


def _torchvision_imports() -> bool:
    if importlib.util.find_spec("torchvision") is None:
        return False
    try:
        import torchvision.transforms.functional  # noqa: F401
    except Exception:  # built for another torch or Python: as good as absent
        return False
    return True


def _register_torchvision_case() -> None:
    """torchvision is in the torch 1.x environments only; where it is absent the case does not exist."""
    if not _torchvision_imports():
        return

    @register_case(
        "torchvision_affine",
        family="grid_sample",
        inputs=image_inputs,
        params=(
            {"transform": "rotate", "mode": "bilinear", "padding_mode": "zeros", "align_corners": False},
            {"transform": "affine", "mode": "nearest", "padding_mode": "zeros", "align_corners": False},
        ),
        shapes=({"N": 2, "H": 16, "W": 20}, {"N": 1, "H": 16, "W": 20}, {"N": 3, "H": 16, "W": 20}),
        input_names=("image",),
        dynamic_axes={"image": {0: "batch"}, "output": {0: "batch"}},  # its grid is built from the size
        exporters=("torchscript",),
        opsets=MODEL_OPSETS,
        tags=("model", "unmodified", "torchvision"),
    )
    def torchvision_affine(params: Dict[str, Any], op: Any) -> nn.Module:
        """torchvision's tensor rotate (bilinear) and affine (nearest), unmodified: it calls grid_sample itself."""
        return TorchvisionTransform(op, params)


_register_torchvision_case()
