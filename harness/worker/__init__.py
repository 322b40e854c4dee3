"""Inside an environment: the worker loop and one cell's pipeline (export, onnxruntime, parity, measurement)."""
