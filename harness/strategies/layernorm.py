"""layernorm strategies: native nn.functional.layer_norm (one LayerNormalization node from opset 17) and
`decomposed`, mean/variance/normalise in elementary ops, the graph every older opset gets anyway."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from harness.strategies import STANDARD, Strategy, register_strategy

FAMILY = "layernorm"


@register_strategy
class Native(Strategy):
    family = FAMILY
    name = "native"
    portability = STANDARD
    summary = (
        "torch.nn.functional.layer_norm as is: ONNX LayerNormalization (one node) from opset 17, "
        "ReduceMean/Sub/Pow/Sqrt/Div below it"
    )
    reference = True

    def op(self) -> Callable[..., Any]:
        import torch.nn.functional as F

        return F.layer_norm


@register_strategy
class Decomposed(Strategy):
    family = FAMILY
    name = "decomposed"
    portability = STANDARD
    summary = "mean, biased variance and normalisation written out in tensor ops; the same graph at every opset"

    def op(self) -> Callable[..., Any]:
        return layer_norm


def layer_norm(
    input: Any, normalized_shape: Sequence[int], weight: Any = None, bias: Any = None, eps: float = 1e-5
) -> Any:
    """F.layer_norm from mean and variance over the trailing `normalized_shape` axes."""
    dims = tuple(range(-len(normalized_shape), 0))
    mean = input.mean(dim=dims, keepdim=True)
    centred = input - mean
    var = (centred * centred).mean(dim=dims, keepdim=True)
    out = centred / (var + eps).sqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out
