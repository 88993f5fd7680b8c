"""The torch.distributed store as the NCCL backend's bootstrap (csrc/comm/nccl/nccl_bootstrap.h).

When a default process group exists, rankRoot's ncclUniqueId travels through its store, which reaches
ranks on other hosts; otherwise the C++ side falls back to a node-local rendezvous file.
"""

from __future__ import annotations

import datetime
from types import ModuleType

import torch.distributed as dist


def available() -> bool:
    """True when a default process group (and so its store) exists in this process."""
    return dist.is_available() and dist.is_initialized()


def _store() -> dist.Store:
    from torch.distributed.distributed_c10d import _get_default_store

    return _get_default_store()


def store_set(key: str, value: str) -> None:
    """Publishes `value` under `key` (rankRoot's id as hex text)."""
    _store().set(key, value)


def store_get(key: str, timeout_s: float) -> str:
    """Waits up to `timeout_s` seconds for `key` and returns its value; raises on timeout."""
    store = _store()
    store.wait([key], datetime.timedelta(seconds=timeout_s))
    return store.get(key).decode()


def install(native: ModuleType) -> None:
    """Hands the three hooks to atb_ops._C."""
    native._set_nccl_store_hooks(available, store_set, store_get)
