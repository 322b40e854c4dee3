"""onnxruntime sessions on CPU or CUDA: which provider really ran each node, and IO-bound timing on GPUs."""

from __future__ import annotations

import collections
import json
import os
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

GPU_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider")


class OrtSession:
    def __init__(
        self,
        blob: bytes,
        device: str,
        threads: int,
        tensorrt: bool = False,
        *,
        arena: bool = True,
        input_names: Sequence[str] = (),
    ) -> None:
        """`arena=False` frees each run's buffers, so a resident-set peak shows what one run really takes.
        `input_names` names the inputs it is given, in their order: the session takes the ones its graph declares."""
        import onnxruntime as ort

        self.ort = ort
        self.device = device
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.enable_cpu_mem_arena = arena
        so.log_severity_level = 3
        providers: List[str] = ["CPUExecutionProvider"]
        if device == "cuda":
            available = ort.get_available_providers()
            wanted = [p for p in GPU_PROVIDERS if p in available and (tensorrt or p != "TensorrtExecutionProvider")]
            if not wanted:
                raise RuntimeError(
                    f"onnxruntime {ort.__version__} offers no CUDA provider here (has {', '.join(available)}); "
                    "install onnxruntime-gpu"
                )
            providers = wanted + providers
        self._blob = blob
        self._options = so
        self.session = ort.InferenceSession(blob, sess_options=so, providers=providers)
        self.providers = list(self.session.get_providers())
        self.names = [i.name for i in self.session.get_inputs()]
        self.input_names = tuple(input_names)

    @property
    def blob(self) -> bytes:
        """The serialised model, for a second session on the same graph."""
        return self._blob

    @property
    def threads(self) -> int:
        return int(self._options.intra_op_num_threads)

    def run(self, inputs: Sequence[Any]) -> List[np.ndarray]:
        return self.session.run(None, self.feed(inputs))

    def feed(self, inputs: Sequence[Any]) -> Dict[str, np.ndarray]:
        return {name: _numpy(t) for name, t in by_name(self.names, self.input_names, inputs).items()}

    def timed_call(self, inputs: Sequence[Any]) -> Callable[[], Any]:
        """A callable for the timer: on CUDA the inputs and outputs stay on the device (IO binding)."""
        feed = self.feed(inputs)
        if self.device != "cuda" or self.providers[0] not in GPU_PROVIDERS:
            return lambda: self.session.run(None, feed)
        binding = self.session.io_binding()
        for name, array in feed.items():
            binding.bind_ortvalue_input(name, self.ort.OrtValue.ortvalue_from_numpy(array, "cuda", 0))
        for out in self.session.get_outputs():
            binding.bind_output(out.name, "cuda", 0)

        def call() -> Any:
            self.session.run_with_iobinding(binding)

        return call

    def placement(self, inputs: Sequence[Any]) -> Dict[str, Any]:
        """Nodes per provider from one profiled run: a GPU session that quietly runs a node on CPU shows here."""
        so = self.ort.SessionOptions()
        so.intra_op_num_threads = self._options.intra_op_num_threads
        so.log_severity_level = 3
        so.enable_profiling = True
        with tempfile.TemporaryDirectory() as tmp:
            so.profile_file_prefix = os.path.join(tmp, "profile")
            session = self.ort.InferenceSession(self._blob, sess_options=so, providers=self.providers)
            session.run(None, self.feed(inputs))
            path = session.end_profiling()
            del session  # Windows deletes no file a live session still holds
            with open(path) as fh:
                events = json.load(fh)
        per_provider: Dict[str, int] = collections.Counter()
        cpu_ops: Dict[str, int] = collections.Counter()
        for event in events:
            args = event.get("args") or {}
            if (
                event.get("cat") != "Node"
                or "provider" not in args
                or not event.get("name", "").endswith("_kernel_time")
            ):
                continue
            per_provider[args["provider"]] += 1
            if args["provider"] == "CPUExecutionProvider":
                cpu_ops[args.get("op_name", "?")] += 1
        return {"nodes_per_provider": dict(per_provider), "cpu_fallback_ops": dict(cpu_ops)}


def by_name(declared: Sequence[str], given: Sequence[str], inputs: Sequence[Any]) -> Dict[str, Any]:
    """The inputs a graph declares, by name, from those given (named `given`, in order): an input the exporter
    dropped (the model read only its size, say) is left out wherever it stands. By position where the graph's names
    are not among the given ones (an exporter that renamed them), as runtimes fed a graph before."""
    if given and all(name in given for name in declared):
        return {name: inputs[given.index(name)] for name in declared}
    return dict(zip(declared, inputs))


def _numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def cuda_unavailable_reason(torch: Any) -> Optional[str]:
    """Why this torch cannot drive the GPU here (none visible, or a build without this GPU's kernels)."""
    if not torch.cuda.is_available():
        return "no CUDA device is visible to this torch (torch.cuda.is_available() is False)"
    major, minor = torch.cuda.get_device_capability(0)
    arch = f"sm_{major}{minor}"
    arch_list = getattr(torch.cuda, "get_arch_list", lambda: [])()
    if arch_list and arch not in arch_list and f"compute_{major}{minor}" not in arch_list:
        newest = max((a for a in arch_list if a.startswith("sm_")), default="none", key=lambda a: int(a[3:]))
        return (
            f"torch {torch.__version__} carries kernels up to {newest}, not this GPU's {arch} "
            f"({torch.cuda.get_device_name(0)})"
        )
    return None
