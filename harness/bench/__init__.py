"""bench-op: grid_sample implementations measured side by side, apart from the Markdown table they print."""
