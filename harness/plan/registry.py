"""The case registry: a case is a model factory plus inputs, registered with a decorator."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from harness.errors import UserError

SHAPE_MODES = ("static", "dynamic")
EXPORTERS = ("torchscript", "dynamo")


@dataclass(frozen=True)
class Case:
    """A model and its inputs in one operator family.

    `model(params, op)` returns an nn.Module; `op` is the family's operator as the strategy under test
    provides it (a model that calls the torch function directly is covered by `harness.ops.patched`).
    `inputs(params, shape, generator)` returns a tuple of float32 CPU tensors for one entry of `shapes`;
    the first shape is the export shape, the others check a dynamic export. `variants` more input sets
    at the export shape (`shape["variant"]` = 1..variants) check every cell, for instance the other side
    of a data-dependent branch that tracing froze. `operators` names other routed families the model calls
    (a spatial transformer's affine_grid): each of its params carries one of them, named by the family,
    with the strategy that operator runs through in that cell. `requires` are the packages the model needs
    beyond the environment's pins (`"kornia"`, `"torchvision>=0.12"`): `nox -s matrix` resolves them per
    environment and runs the case's cells in a venv of their own (harness.host.requirements).
    """

    name: str
    family: str
    model: Callable[..., Any]
    inputs: Callable[..., Tuple[Any, ...]]
    params: Tuple[Dict[str, Any], ...] = ({},)
    shapes: Tuple[Dict[str, int], ...] = ({},)
    variants: int = 0
    input_names: Tuple[str, ...] = ()
    output_names: Tuple[str, ...] = ("output",)
    dynamic_axes: Optional[Dict[str, Dict[int, str]]] = None
    exporters: Tuple[str, ...] = EXPORTERS
    shape_modes: Tuple[str, ...] = ("static",)
    opsets: Optional[Tuple[int, ...]] = None
    tags: Tuple[str, ...] = ()
    tolerance: Optional[Tuple[float, float]] = None
    operators: Tuple[str, ...] = ()  # other routed families the model calls; each param of that name picks one
    requires: Tuple[str, ...] = ()  # pip requirements the model needs, resolved per environment against its pins
    strategies: Optional[Tuple[str, ...]] = None  # the family's strategies it runs with; None: every one
    description: str = ""
    source: str = field(default="", compare=False)


_CASES: Dict[str, Case] = {}


def register_case(
    name: str,
    *,
    family: str,
    inputs: Callable[..., Tuple[Any, ...]],
    params: Sequence[Dict[str, Any]] = ({},),
    shapes: Sequence[Dict[str, int]] = ({},),
    variants: int = 0,
    input_names: Sequence[str] = (),
    output_names: Sequence[str] = ("output",),
    dynamic_axes: Optional[Dict[str, Dict[int, str]]] = None,
    exporters: Sequence[str] = EXPORTERS,
    shape_modes: Optional[Sequence[str]] = None,
    opsets: Optional[Sequence[int]] = None,
    tags: Sequence[str] = (),
    tolerance: Optional[Tuple[float, float]] = None,
    operators: Sequence[str] = (),
    requires: Sequence[str] = (),
    strategies: Optional[Sequence[str]] = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated model factory `fn(params, op) -> nn.Module` as a case.

    `requires` lists pip requirements as literals (the host reads them from the file without importing it); a
    case file's module-level `REQUIRES = [...]` applies to each of its cases. Import them inside the factory.
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        modes = _shape_modes(name, shapes, dynamic_axes, exporters, shape_modes)
        case = Case(
            name=name,
            family=family,
            model=fn,
            inputs=inputs,
            params=tuple(dict(p) for p in params),
            shapes=tuple(dict(s) for s in shapes),
            variants=int(variants),
            input_names=tuple(input_names),
            output_names=tuple(output_names),
            dynamic_axes=dynamic_axes,
            exporters=tuple(exporters),
            shape_modes=modes,
            opsets=tuple(opsets) if opsets else None,
            tags=tuple(tags),
            tolerance=tolerance,
            operators=tuple(operators),
            requires=tuple(requires) or _file_requires(fn),
            strategies=tuple(strategies) if strategies else None,
            description=(fn.__doc__ or "").strip().split("\n")[0],
            source=getattr(fn, "__module__", ""),
        )
        if name in _CASES and _CASES[name].source != case.source:
            raise UserError(f"case {name!r} is registered twice ({_CASES[name].source} and {case.source}); rename one")
        _CASES[name] = case
        return fn

    return decorate


def _shape_modes(
    name: str,
    shapes: Sequence[Dict[str, int]],
    dynamic_axes: Optional[Dict[str, Dict[int, str]]],
    exporters: Sequence[str],
    shape_modes: Optional[Sequence[str]],
) -> Tuple[str, ...]:
    """The case's shape modes, once its exporters and dynamic axes are checked."""
    modes = tuple(shape_modes) if shape_modes else (("static", "dynamic") if dynamic_axes else ("static",))
    if "dynamic" in modes and (not dynamic_axes or len(shapes) < 2):
        raise UserError(
            f"case {name!r}: the dynamic shape mode needs dynamic_axes and at least two shapes; "
            "add them to register_case(...) or drop 'dynamic' from shape_modes"
        )
    for exporter in exporters:
        if exporter not in EXPORTERS:
            raise UserError(f"case {name!r}: unknown exporter {exporter!r}; use one of {', '.join(EXPORTERS)}")
    return modes


def _file_requires(fn: Callable[..., Any]) -> Tuple[str, ...]:
    module = sys.modules.get(getattr(fn, "__module__", ""))
    return tuple(getattr(module, "REQUIRES", ()) or ())


def requirement_key(requires: Sequence[str]) -> str:
    """A set of requirements as one canonical string: the cases that share it share a venv."""
    return ",".join(sorted({"".join(r.split()).lower() for r in requires}))


def all_cases() -> List[Case]:
    return sorted(_CASES.values(), key=lambda c: (c.family, c.name))


def get_case(name: str) -> Case:
    try:
        return _CASES[name]
    except KeyError:
        raise UserError(f"unknown case {name!r}; `python -m harness list` shows the cases") from None


BUILTIN_CASES_DIR = Path(__file__).resolve().parents[2] / "cases"


def load_cases(extra_dirs: Sequence[str] = (), builtin: bool = True) -> List[Case]:
    """Import every case file: the built-in `cases/` folder and each `--cases-dir`."""
    dirs = [BUILTIN_CASES_DIR] if builtin and BUILTIN_CASES_DIR.is_dir() else []
    if builtin and not dirs and not extra_dirs:
        raise UserError(
            f"no built-in cases at {BUILTIN_CASES_DIR}: the harness runs from a checkout of the repository; "
            "run it there, or pass --cases-dir DIR with your own case files"
        )
    for d in extra_dirs:
        path = Path(d)
        if not path.is_dir():
            raise UserError(f"--cases-dir {d}: no such folder; pass a folder holding case files (*.py)")
        dirs.append(path)
    for folder in dirs:
        for file in sorted(folder.glob("*.py")):
            if file.name.startswith("_"):
                continue
            _import_file(file)
    return all_cases()


def _import_file(file: Path) -> None:
    mod_name = "harness_cases." + file.stem if file.parent == BUILTIN_CASES_DIR else "user_cases." + file.stem
    if mod_name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(mod_name, str(file))
    if spec is None or spec.loader is None:
        raise UserError(f"{file}: cannot be imported as a Python file; check its name")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except UserError:
        raise
    except Exception as exc:
        del sys.modules[mod_name]
        raise UserError(
            f"{file}: importing the case file failed with {type(exc).__name__}: {exc}; fix the file"
        ) from exc
