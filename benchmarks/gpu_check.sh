#!/usr/bin/env bash
# One prepared GPU check for a lent GPU machine whose Python is provisioned already (no package index):
# runs the bench-gpu cells in that interpreter, renders the page, and leaves everything under $OUT (or ./gpu-out).
#   bash benchmarks/gpu_check.sh            # on the GPU machine, from the repository root
set -uo pipefail
out="${OUT:-gpu-out}"
mkdir -p "$out"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 HARNESS_ENV="${HARNESS_ENV:-gpu-provisioned}"
python3 - <<'PY' > "$out/fingerprint.txt" 2>&1
import torch, platform
print("python", platform.python_version(), "torch", torch.__version__, "cuda", torch.version.cuda)
print("gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
try:
    import onnxruntime as ort
    print("onnxruntime", ort.__version__, ort.get_available_providers())
except ImportError as exc:
    print("onnxruntime missing:", exc)
PY
cat "$out/fingerprint.txt"
timeout 420 python3 -m harness run --env "$HARNESS_ENV" --device cuda --dtype float32,float16 --tag gpu \
  --results-dir "$out" --latency-budget 0.3 --quiet 2>&1 | tail -n 5
timeout 120 python3 -m harness bench-op --shapes ref,fmap --budget 1 --json "$out/bench-op.json" 2>&1 \
  | tee "$out/bench-op.txt" | tail -n 30
