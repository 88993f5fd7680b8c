"""What one run of the collectives bench is: the configuration every rank, and Open MPI's job, rebuild it from."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field


@dataclass
class BenchConfig:
    """Everything the ranks (and the Open MPI helper) need to reproduce one run."""

    world_size: int = 2
    op: str = "alltoallv"  # ops.COLLECTIVES
    backend: str = "shm"
    sizes: list[int] = field(default_factory=list)
    dtype: str = "float32"
    pattern: str = "uniform"
    spread: float = 4.0
    seed: int = 0
    iters: int = 0  # 0: auto, about budget_s of timed calls per size and backend
    warmup: int = 5
    budget_s: float = 0.25
    gloo: bool = True
    api: bool = False  # also time the collective through atb_ops.distributed
    shared: bool = True  # also time atb_ops with send/output tensors from atb_ops.shm_empty (CPU backends)
    torchscript: bool = True  # also time execute_out through torch.classes.OperationTorch.OperationTorch
    check: bool = True
    bind: str = "none"  # "core": rank r runs on allowed CPU r % count (as mpirun --bind-to core)
    pages: str = "huge"  # pages.CHOICES: the memory every library's buffers get
    hosts: int = 1  # emulated hosts the ranks run on, host by host (--hosts); on two, raw_link's column is timed

    def to_json(self) -> str:
        """The configuration as JSON text (Open MPI's job reads it from a file; the JSON output embeds it)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> BenchConfig:
        """The configuration `to_json` wrote.

        Args:
            text: JSON text of every field.

        Returns:
            The configuration.
        """
        return cls(**json.loads(text))


def resolve_bind(bind: str, world_size: int) -> str:
    """--bind as the ranks apply it: "auto" pins ("core") when the ranks fit the CPUs this process may use, as
    mpirun does by default, and leaves them free ("none") when they do not.

    Args:
        bind: "auto", "core" or "none".
        world_size: the ranks to place.

    Returns:
        "core" or "none".
    """
    if bind != "auto":
        return bind
    return "core" if world_size <= len(os.sched_getaffinity(0)) else "none"
