"""Stored graphs judged again in a runtime environment (an onnxruntime release, OpenVINO): no torch here."""
