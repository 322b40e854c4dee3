"""Environment definitions are data: one TOML file each under environments/. Read on the host only."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from harness.errors import UserError
from harness.record import ladder_key
from harness.record.precisions import PRECISION_NAMES

ENV_DIR = Path(__file__).resolve().parents[2] / "environments"
# Runtime environments: where stored graphs are replayed (harness replay). A Python and exact pins, no torch.
RUNTIME_DIR = ENV_DIR / "runtimes"
RUNTIMES = ("onnxruntime", "openvino")
# The converter environment (fp16, int8 conversions of stored graphs: harness convert).
TOOLS_DIR = ENV_DIR / "tools"
PRECISIONS = PRECISION_NAMES
# Where an environment's pins must exist as wheels; harness.host.pins maps each to pip's platform tags.
PLATFORMS = ("linux_x86_64", "win_amd64", "linux_aarch64")
DEFAULT_PLATFORMS = ("linux_x86_64",)


@dataclass(frozen=True)
class MmcvSpec:
    spec: str
    runtime: Tuple[str, ...] = ()
    build: Tuple[str, ...] = ()

    @property
    def package(self) -> str:
        return self.spec.split("==")[0]

    @property
    def version(self) -> str:
        return self.spec.split("==")[1]


@dataclass(frozen=True)
class Environment:
    name: str
    python: str
    pins: Tuple[str, ...]
    description: str = ""
    mmcv: Optional[MmcvSpec] = None
    extra_index_urls: Tuple[str, ...] = ()
    device: str = "cpu"
    default: bool = True
    platforms: Tuple[str, ...] = DEFAULT_PLATFORMS
    runtime: Optional[str] = None  # a runtime environment's runtime (onnxruntime, openvino); None for an export one
    precisions: Tuple[str, ...] = ("fp32",)  # the precisions a runtime environment judges by default
    skip_tags: Tuple[str, ...] = ()  # a runtime environment leaves out the graphs of cases with these tags
    source: str = field(default="", compare=False)

    def pin(self, package: str) -> Optional[str]:
        for pin in self.pins:
            name, _, version = pin.partition("==")
            if name.strip().lower() == package.lower():
                return version.strip()
        return None

    def venv_hash(self, python_version: str, extra: Tuple[str, ...] = ()) -> str:
        blob = json.dumps(
            [
                python_version,
                sorted(self.pins),
                self.mmcv and self.mmcv.spec,
                self.mmcv and sorted(self.mmcv.runtime),
                list(self.extra_index_urls),
                sorted(extra),
            ]
        )
        return hashlib.sha1(blob.encode()).hexdigest()[:10]


def _load_toml(path: Path) -> Dict[str, Any]:
    try:
        import tomllib  # Python 3.11+: the host side only
    except ImportError:  # pragma: no cover
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML ({exc}); fix the file") from exc


def load_environment(path: Path) -> Environment:
    data = _load_toml(path)
    for key in ("name", "python", "pins"):
        if key not in data:
            raise UserError(f"{path}: missing key {key!r}; an environment needs name, python and pins")
    for pin in data["pins"]:
        if "==" not in pin:
            raise UserError(f"{path}: pin {pin!r} is not exact; write it as package==version")
    mmcv = None
    if "mmcv" in data:
        m = data["mmcv"]
        if "==" not in m.get("spec", ""):
            raise UserError(f'{path}: [mmcv] spec must be exact, like "mmcv-full==1.7.2"')
        mmcv = MmcvSpec(m["spec"], tuple(m.get("runtime", ())), tuple(m.get("build", ())))
    return Environment(
        name=data["name"],
        python=str(data["python"]),
        pins=tuple(data["pins"]),
        description=data.get("description", ""),
        mmcv=mmcv,
        extra_index_urls=tuple(data.get("extra_index_urls", ())),
        device=data.get("device", "cpu"),
        default=bool(data.get("default", True)),
        platforms=_platforms(path, data),
        runtime=_runtime(path, data),
        precisions=_precisions(path, data),
        skip_tags=_skip_tags(path, data),
        source=str(path),
    )


def _runtime(path: Path, data: Dict[str, Any]) -> Optional[str]:
    runtime = data.get("runtime")
    if runtime is not None and runtime not in RUNTIMES:
        raise UserError(
            f"{path}: runtime = {runtime!r} is not one this harness drives; write one of {', '.join(RUNTIMES)}"
        )
    if runtime is None and path.parent.name == RUNTIME_DIR.name:
        raise UserError(f'{path}: a runtime environment names its runtime; add runtime = "onnxruntime" (or "openvino")')
    return runtime


def _skip_tags(path: Path, data: Dict[str, Any]) -> Tuple[str, ...]:
    tags = data.get("skip_tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
        raise UserError(f'{path}: skip_tags = {tags!r}; write a list of case tags, like ["bench"]')
    return tuple(tags)


def _precisions(path: Path, data: Dict[str, Any]) -> Tuple[str, ...]:
    precisions = data.get("precisions", ["fp32"])
    if not isinstance(precisions, list) or not precisions or any(p not in PRECISIONS for p in precisions):
        raise UserError(f"{path}: precisions = {precisions!r}; write a list of {', '.join(PRECISIONS)}")
    return tuple(precisions)


def _platforms(path: Path, data: Dict[str, Any]) -> Tuple[str, ...]:
    platforms = data.get("platforms", list(DEFAULT_PLATFORMS))
    if not isinstance(platforms, list) or not platforms or any(p not in PLATFORMS for p in platforms):
        raise UserError(
            f"{path}: platforms = {platforms!r} is not a list of known platforms; "
            f'write a list of {", ".join(PLATFORMS)}, like platforms = ["linux_x86_64"]'
        )
    return tuple(dict.fromkeys(platforms))


def load_environments(folder: Path = ENV_DIR, device: str = "cpu") -> List[Environment]:
    envs = [load_environment(p) for p in sorted(folder.glob("*.toml"))]
    names = [e.name for e in envs]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise UserError(f"environments named twice: {', '.join(sorted(dupes))}; give each file its own name")
    return [e for e in envs if e.device == device]


def ladder(device: str = "cpu") -> List[Environment]:
    """The runtime environments in ladder order (harness.record.ladder_key): onnxruntime by version, then OpenVINO
    by version; the noxfile chains the replays and CI checks them in this order."""
    envs = load_environments(RUNTIME_DIR, device=device)
    return sorted(envs, key=lambda e: ladder_key(e.runtime or "", e.pin(e.runtime or "") or e.pins[0].split("==")[-1]))


def cache_dir() -> Path:
    return Path(os.environ.get("ONNX_COMPAT_CACHE") or Path.home() / ".cache" / "onnx-compat-matrix")
