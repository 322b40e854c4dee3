"""The runtimes a stored graph is replayed on, behind one small interface: load a graph file, run it on arrays,
hand the timer a call. onnxruntime and OpenVINO; neither torch nor onnx is imported here."""

from __future__ import annotations

import os
import platform
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from harness.errors import UserError
from harness.judge.session import OrtSession, by_name
from harness.judge.wire import tiny_model
from harness.judge.zygote import Zygote
from harness.record import Fingerprint, Runtime, dist_version, torch_free_fingerprint


class Loaded:
    """A graph a runtime has loaded: run it on arrays (in the graph's input order), or hand the timer a call."""

    providers: Tuple[str, ...] = ()
    settings: Dict[str, str] = {}  # what the runtime chose for this graph ("inference_precision": "bf16")

    def run(self, inputs: Sequence[np.ndarray]) -> List[np.ndarray]:
        raise NotImplementedError

    def call(self, inputs: Sequence[np.ndarray]) -> Callable[[], Any]:
        raise NotImplementedError


class RuntimeAdapter:
    """One runtime as installed here: its name and version, the latency target it records, how it loads a graph."""

    name = ""
    target = ""  # the record's latency and memory target

    def __init__(self, env_name: str, device: str = "cpu") -> None:
        self.env_name = env_name
        self.device = device
        self.version = dist_version(*self.distributions())
        self._fingerprint: Optional[Fingerprint] = None
        self.zygote: Optional[Zygote] = None  # where each graph is judged, when a replay worker started one

    def __getstate__(self) -> Dict[str, Any]:
        """Sent to the zygote's child as it is, but for the zygote itself."""
        return dict(self.__dict__, zygote=None)

    def initialise(self) -> None:
        """The runtime as a process has it once it has run one tiny graph (its own start-up paid)."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny.onnx")
            with open(path, "wb") as fh:
                fh.write(tiny_model())
            self.load(path, 1, ("x",)).run([np.zeros((1,), np.float32)])

    def distributions(self) -> Tuple[str, ...]:
        raise NotImplementedError

    def load(
        self, path: str, threads: int, input_names: Sequence[str] = (), hint: Optional[str] = "f32", arena: bool = True
    ) -> Loaded:
        """The graph loaded; it is then run on inputs named `input_names` (the stored samples' order) and takes
        the ones it declares, by name. `hint`: the inference precision asked for (None: the runtime's default),
        where the runtime has one; `arena=False`: a session that frees each run's buffers, where it can."""
        raise NotImplementedError

    def default_hint(self) -> Optional[str]:
        """The inference precision this runtime picks on this device when none is asked for (None: it takes none)."""
        return None

    def cannot(self, hint: Optional[str]) -> Optional[str]:
        """Why this runtime cannot compute at `hint` here (None: it can)."""
        return None if hint in (None, "f32") else f"{self.name} takes no inference precision hint"

    def providers(self) -> Tuple[str, ...]:
        return ()

    def describe(self) -> Runtime:
        return Runtime(
            self.name,
            self.version,
            env=self.env_name,
            python=platform.python_version(),
            platform=platform.platform(),
            providers=self.providers(),
        )

    def fingerprint(self) -> Fingerprint:
        """This runtime environment as installed (no torch here): what a replay record keeps beside the
        exporting environment's fingerprint."""
        if self._fingerprint is None:
            self._fingerprint = torch_free_fingerprint(self.providers())
        return self._fingerprint


class OnnxRuntime(RuntimeAdapter):
    name = "onnxruntime"
    target = "ort"

    def distributions(self) -> Tuple[str, ...]:
        return ("onnxruntime", "onnxruntime-gpu", "onnxruntime-openvino")

    def load(
        self, path: str, threads: int, input_names: Sequence[str] = (), hint: Optional[str] = "f32", arena: bool = True
    ) -> Loaded:
        if self.device == "cuda":
            _preload_cuda()
        with open(path, "rb") as fh:
            return _OrtGraph(OrtSession(fh.read(), self.device, threads, arena=arena, input_names=input_names))

    def providers(self) -> Tuple[str, ...]:
        import onnxruntime

        return tuple(onnxruntime.get_available_providers())


def _preload_cuda() -> None:
    """onnxruntime-gpu >= 1.21 finds the CUDA libraries of the nvidia-* wheels itself once asked; older releases
    read LD_LIBRARY_PATH, which nox's replay session sets for a CUDA runtime."""
    import onnxruntime

    preload = getattr(onnxruntime, "preload_dlls", None)
    if preload is not None:
        preload()


class _OrtGraph(Loaded):
    def __init__(self, session: OrtSession) -> None:
        self.session = session
        self.providers = tuple(session.providers)

    def run(self, inputs: Sequence[np.ndarray]) -> List[np.ndarray]:
        return self.session.run(inputs)

    def call(self, inputs: Sequence[np.ndarray]) -> Callable[[], Any]:
        return self.session.timed_call(inputs)


class OpenVino(RuntimeAdapter):
    """OpenVINO reads the .onnx file itself; fp32 graphs run at f32 (not the bf16 a newer CPU would pick) unless a
    runtime precision asks for its default, bf16 or f16."""

    name = "openvino"
    target = "openvino"
    _core: Any = None

    def distributions(self) -> Tuple[str, ...]:
        return ("openvino",)

    def load(
        self, path: str, threads: int, input_names: Sequence[str] = (), hint: Optional[str] = "f32", arena: bool = True
    ) -> Loaded:
        core = self.core()
        config = {"INFERENCE_NUM_THREADS": str(threads)}
        if hint is not None:
            config["INFERENCE_PRECISION_HINT"] = hint
        return _OvGraph(core.compile_model(core.read_model(path), self.device.upper(), config), input_names)

    def core(self) -> Any:
        if self._core is None:  # one Core per process: making one per graph costs more than compiling most graphs
            self._core = _core()
        return self._core

    def default_hint(self) -> Optional[str]:
        return _type_name(self.core().get_property(self.device.upper(), "INFERENCE_PRECISION_HINT"))

    def cannot(self, hint: Optional[str]) -> Optional[str]:
        """OpenVINO's own word on this device: the optimisation capabilities it lists (BF16, FP16)."""
        if hint in (None, "f32"):
            return None
        capabilities = [str(c) for c in self.core().get_property(self.device.upper(), "OPTIMIZATION_CAPABILITIES")]
        if OPENVINO_CAPABILITY.get(hint, hint.upper()) in capabilities:
            return None
        return f"OpenVINO {self.version} on this {self.device.upper()} lists {', '.join(capabilities)}: no {hint}"

    def providers(self) -> Tuple[str, ...]:
        return (self.device.upper(),)


OPENVINO_CAPABILITY = {"bf16": "BF16", "f16": "FP16"}  # a hint, as OPTIMIZATION_CAPABILITIES lists it


class _OvGraph(Loaded):
    def __init__(self, compiled: Any, input_names: Sequence[str]) -> None:
        self.compiled = compiled
        self.request = compiled.create_infer_request()
        self.providers = ("CPU",)
        self.settings = {"inference_precision": _type_name(compiled.get_property("INFERENCE_PRECISION_HINT"))}
        self.names = [port.get_any_name() for port in compiled.inputs]
        self.input_names = tuple(input_names)

    def feed(self, inputs: Sequence[np.ndarray]) -> Dict[str, np.ndarray]:
        return by_name(self.names, self.input_names, inputs)

    def run(self, inputs: Sequence[np.ndarray]) -> List[np.ndarray]:
        results = self.request.infer(self.feed(inputs))
        return [np.array(results[out]) for out in self.compiled.outputs]  # copies: the next run reuses the buffers

    def call(self, inputs: Sequence[np.ndarray]) -> Callable[[], Any]:
        feed = self.feed(inputs)
        return lambda: self.request.infer(feed)


def _type_name(chosen: Any) -> str:
    """An openvino Type as its hint spells it: "f32", "bf16", "f16"."""
    return chosen.to_string() if hasattr(chosen, "to_string") else str(chosen)


def _core() -> Any:
    try:
        from openvino import Core  # 2023.1 and later
    except ImportError:
        from openvino.runtime import Core  # 2023.0
    return Core()


ADAPTERS = {"onnxruntime": OnnxRuntime, "openvino": OpenVino}


def adapter_for(runtime: str, env_name: str, device: str = "cpu") -> RuntimeAdapter:
    """The adapter of this environment's runtime; a clear error when the runtime is unknown or not installed."""
    if runtime not in ADAPTERS:
        raise UserError(
            f"--runtime-kind {runtime!r} is not a runtime this harness drives; use one of {', '.join(ADAPTERS)}"
        )
    adapter = ADAPTERS[runtime](env_name, device)
    if adapter.version is None:
        raise UserError(
            f"{runtime} is not installed in this Python ({platform.python_version()}); replay inside a runtime "
            f"environment: nox -s \"replay(runtime='{env_name}')\""
        )
    return adapter
