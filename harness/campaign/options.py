"""How the worker measures: the one typed definition of what the parent sends each worker on its command line."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Optional


@dataclass(frozen=True)
class Options:
    threads: int = 2
    latency: bool = True
    memory: bool = True
    latency_budget_s: float = 0.03
    tensorrt: bool = False
    artifacts_dir: Optional[str] = None  # keep each exported graph with its samples here (harness replay)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Options:
        data = json.loads(text)
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})
