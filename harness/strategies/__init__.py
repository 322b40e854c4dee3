"""Strategies: ways to make a family's operator exportable, each declaring what it supports."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Dict, List, Optional, Tuple

from harness.errors import UserError
from harness.record import EnvInfo, Portability

if TYPE_CHECKING:  # for readers: strategies import torch only when they run
    from torch.nn import Module

    from harness.plan.spec import CellSpec

STANDARD, ORT_CONTRIB, CUSTOM_DOMAIN = Portability.STANDARD, Portability.ORT_CONTRIB, Portability.CUSTOM_DOMAIN
# Packages some strategies need and an environment may install later (nox builds mmcv after the other cells ran).
OPTIONAL_PACKAGES = ("mmcv",)


class Strategy:
    """One way to run and export a family's operator.

    A strategy never knows about the runner: it offers the operator, a context to enter while the model
    runs and exports, and says which combinations it cannot handle (a one-line reason) before any work.
    """

    family = ""
    name = ""
    portability: Portability = Portability.STANDARD
    summary = ""
    reference = False  # the family's eager ground truth
    needs: Tuple[str, ...] = ()  # optional packages it imports (mmcv), each a field of the fingerprint

    def leaves_out(self) -> Tuple[str, ...]:
        """The optional packages a cell of this strategy does not depend on: installing them keeps its record."""
        return tuple(name for name in OPTIONAL_PACKAGES if name not in self.needs)

    def unavailable(self, env: EnvInfo) -> Optional[str]:
        """Why this strategy cannot run in this environment at all, or None."""
        return None

    def unsupported(self, cell: CellSpec, env: EnvInfo) -> Optional[str]:
        """Why this strategy cannot handle this cell (params, opset, exporter, device, dtype), or None."""
        return None

    def op(self) -> Callable[..., Any]:
        raise NotImplementedError

    def context(self) -> ContextManager[None]:
        """Entered while the model runs and exports: routes the torch function, scopes a custom symbolic."""
        return contextlib.nullcontext()

    def wrap(self, model: Module, cell: CellSpec) -> Module:
        """The module as this strategy runs and exports it (torch.jit.script, say); the model by default."""
        return model


_STRATEGIES: Dict[str, Dict[str, Strategy]] = {}


def register_strategy(cls: type) -> type:
    inst = cls()
    _STRATEGIES.setdefault(inst.family, {})[inst.name] = inst
    return cls


def _load_builtin() -> None:
    """Import every module of this package once: each family's strategies live in their own module."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


def strategies_for(family: str) -> List[Strategy]:
    _load_builtin()
    return list(_STRATEGIES.get(family, {}).values())


def get_strategy(family: str, name: str) -> Strategy:
    _load_builtin()
    try:
        return _STRATEGIES[family][name]
    except KeyError:
        known = ", ".join(sorted(_STRATEGIES.get(family, {}))) or "none"
        raise UserError(f"unknown strategy {name!r} for family {family!r}; known: {known}") from None


def reference_strategy(family: str) -> Strategy:
    """The family's ground truth: what every other strategy is compared against, named in every record."""
    for strategy in strategies_for(family):
        if strategy.reference:
            return strategy
    raise UserError(f"family {family!r} has no reference strategy; register one with reference = True")


def families() -> List[str]:
    _load_builtin()
    return sorted(_STRATEGIES)
