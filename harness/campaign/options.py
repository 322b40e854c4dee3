"""How the worker measures: the one typed definition of what the parent sends each worker on its command line."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Optional, Sequence

# A case's tag for a correctness sweep: many parameters on toy inputs, chosen to reach the borders. Its cells are
# judged (export, parity, shapes) and by default not costed: on a 2x3x16x17 input a call takes microseconds, the
# framework's per-call and per-node overhead, and a session's footprint is the runtime's own. The bench and model
# cases carry the latency and memory a deployer weighs.
SWEEP = "sweep"
NOT_COSTED = "not costed: a correctness sweep's toy inputs time the framework, not the strategy (--cost-sweeps)"


@dataclass(frozen=True)
class Options:
    threads: int = 2
    latency: bool = True
    memory: bool = True
    latency_budget_s: float = 0.03
    tensorrt: bool = False
    artifacts_dir: Optional[str] = None  # keep each exported graph with its samples here (harness replay)
    cost_sweeps: bool = False  # time and measure the memory of the correctness sweeps' cells too

    def costs(self, tags: Sequence[str]) -> bool:
        """Whether a cell of a case with these tags is timed and its memory measured (the flags allowing)."""
        return self.cost_sweeps or SWEEP not in tags

    def uncosted(self, tags: Sequence[str]) -> Optional[str]:
        """What a cell's skipped latency and memory stages say when `costs` leaves them out."""
        return None if self.costs(tags) else NOT_COSTED

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Options:
        data = json.loads(text)
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})
