"""Every exported graph kept with its samples, so runtimes without torch can judge it again (harness.replay), and the
conversions of the stored graphs to fp16 and int8 (`harness convert`: its kind, its worker, the converters)."""
