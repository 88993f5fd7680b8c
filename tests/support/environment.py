"""The environment of ranks: a job's variables left out of a child's, or variables set for a block and restored."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

# Variables that scope a job: a parent-scoped test must not inherit pytest's.
JOB_VARIABLES = ("ATB_OPS_JOB_ID", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "RANK", "WORLD_SIZE")


def clean_env(**extra: str) -> dict[str, str]:
    """A child's environment: this process's without any job scope.

    Args:
        extra: variables to set on top.

    Returns:
        A new dict; os.environ is left alone.
    """
    env = {k: v for k, v in os.environ.items() if k not in JOB_VARIABLES}
    env.update(extra)
    return env


@contextlib.contextmanager
def environment(env: dict[str, str] | None) -> Iterator[None]:
    """Sets variables of this process for the block, then restores each to what it was, unset included.

    atb_ops reads them when a communicator or a process is made, so a rank that changes one for a case must give
    the next case the value it had.

    Args:
        env: the variables to set (None or empty: nothing changes).
    """
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def cpu_path(path: str) -> Iterator[None]:
    """Forces atb_ops' CPU path ("shm" or "group", ATB_OPS_CPU_PATH) for the calls inside the block.

    A group keeps the communicator its first collective made, whatever the variable says later, and a pool's ranks
    keep their default group from case to case: so the block starts and ends with atb_ops.clear_communicators()
    (every rank of a pool runs the same case, so all call it alike), and its collectives take `path` even when an
    earlier case took the other one.

    Args:
        path: the value of ATB_OPS_CPU_PATH.
    """
    import atb_ops

    atb_ops.clear_communicators()
    try:
        with environment({"ATB_OPS_CPU_PATH": path}):
            yield
    finally:
        atb_ops.clear_communicators()
