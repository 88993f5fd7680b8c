"""The torch.distributed store through which the "hccl" backend shares HCCL's root info.

The C++ backend (csrc/comm/hccl/hccl_bootstrap.cpp) calls these through a hook that op_plugin installs.
When no default process group is initialised, ``store_available`` says so and the backend uses its
node-local, job-scoped rendezvous instead (ranks on one host only).
"""

from __future__ import annotations

from datetime import timedelta

import torch.distributed as dist


def _store() -> dist.Store:
    return dist.distributed_c10d._get_default_store()


def store_available() -> bool:
    """Return True when every rank of the job can reach a store: the default process group's."""
    return dist.is_available() and dist.is_initialized()


def store_set(key: str, value: bytes) -> None:
    """Publish ``value`` under ``key`` (called by the root rank)."""
    _store().set(key, value)


def store_get(key: str, timeout_s: float) -> bytes:
    """Wait up to ``timeout_s`` seconds for ``key`` and return its bytes.

    Raises:
        RuntimeError: (from the store) when the key does not appear in time.
    """
    store = _store()
    store.wait([key], timedelta(seconds=timeout_s))
    return store.get(key)
