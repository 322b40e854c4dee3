"""bench-gpu without a GPU: the refusals, and the CUDA-side helpers as far as a CPU allows."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from conftest import ROOT, run_harness

from harness.judge.session import OrtSession, cuda_unavailable_reason

NO_GPU = not torch.cuda.is_available() and not Path("/proc/driver/nvidia/version").exists()


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU; the refusal is for machines without one")
def test_harness_refuses_cuda_cells_at_once_without_a_gpu(tmp_path):
    proc = run_harness("run", "--device", "cuda", "--tag", "gpu", "--out", str(tmp_path / "r.jsonl"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "sees no CUDA device" in lines[0] and "NVIDIA GPU" in lines[0]
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU; the refusal is for machines without one")
def test_nox_bench_gpu_stops_with_one_line_and_nonzero_exit():
    nox = shutil.which("nox")
    assert nox, "nox must be installed in the tests environment"
    proc = subprocess.run([nox, "-s", "bench-gpu"], capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    assert proc.returncode != 0
    assert "no NVIDIA GPU on this machine" in proc.stderr


def test_cuda_reason_names_the_missing_device():
    if NO_GPU:
        assert "no CUDA device" in cuda_unavailable_reason(torch)


class FakeCuda:
    """A GPU newer than the torch build's kernels, as torch 1.8.1 (cu102) on an H200 (sm_90)."""

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def get_device_capability(index):
        return (9, 0)

    @staticmethod
    def get_arch_list():
        return ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75"]

    @staticmethod
    def get_device_name(index):
        return "NVIDIA H200"


def test_a_gpu_too_new_for_the_torch_build_is_not_applicable_with_the_reason():
    class FakeTorch:
        __version__ = "1.8.1+cu102"
        cuda = FakeCuda

    reason = cuda_unavailable_reason(FakeTorch)
    assert "sm_75" in reason and "sm_90" in reason and "H200" in reason


def test_placement_counts_nodes_per_provider_from_a_profiled_run():
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU())
    from harness.worker.export import export_onnx

    x = torch.randn(1, 1, 8, 8)
    blob = export_onnx(model, (x,), opset=13, exporter="torchscript", input_names=["x"], output_names=["y"])
    session = OrtSession(blob, "cpu", threads=1)
    placement = session.placement((x,))
    assert list(placement["nodes_per_provider"]) == ["CPUExecutionProvider"]  # after onnxruntime's fusions
    assert placement["cpu_fallback_ops"]["Conv"] == 1
    json.dumps(placement)


def test_a_cuda_session_without_a_cuda_provider_says_what_to_install():
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA provider")
    with pytest.raises(RuntimeError, match="install onnxruntime-gpu"):
        OrtSession(b"", "cuda", threads=1)
