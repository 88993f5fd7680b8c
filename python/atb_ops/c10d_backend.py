"""The torch.distributed backend "atb_ops": ``dist.init_process_group("atb_ops")`` on CPU ranks.

``import atb_ops`` registers it (``torch.distributed.Backend.register_backend``, CPU tensors). Every process
group made with ``backend="atb_ops"`` gets a ``atb_ops._C.C10dBackend``: torch.distributed's collectives run
through an atb_ops communicator of the group's ranks (the shared-memory backend, checked across ranks before
any data moves) when every rank of the group is on this host, and through a gloo backend made from the same
store when they are not. Under ``python -m atb_ops run``, backend "hccl" groups on CPU use it.
"""

from __future__ import annotations

import datetime
from typing import Any

import torch.distributed as dist

from atb_ops._host import host_id

NAME = "atb_ops"
_DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)  # torch.distributed's own default
_registered = False


def _all_on_this_host(store: dist.Store, rank: int, size: int) -> bool:
    """Whether every rank of the group runs on this host; a collective over the group's store.

    Args:
        store: the group's store (torch's, prefixed by the group's name).
        rank: this rank in the group.
        size: the group's size.

    Returns:
        True when every rank published this host's id.
    """
    if size == 1:
        return True
    mine = host_id()
    store.set(f"atb_ops/host/{rank}", mine)
    keys = [f"atb_ops/host/{r}" for r in range(size)]
    store.wait(keys)
    return all(store.get(k).decode() == mine for k in keys)


def _create(opts: Any, backend_options: Any) -> dist.ProcessGroup:
    """torch's creator of the backend of one process group (extended API).

    Args:
        opts: torch's ``_DistributedBackendOptions``: store, group_rank, group_size, timeout, group_id.
        backend_options: ``pg_options`` from ``init_process_group``/``new_group`` (unused).

    Returns:
        An ``atb_ops._C.C10dBackend`` when every rank is on this host, else a gloo backend on the same store.

    Raises:
        torch.distributed.DistBackendError: A peer did not join within the group's timeout, or died.
        RuntimeError: The group's ranks disagree on its size (the message names both), or the shared
            memory could not be set up.
    """
    from atb_ops import _C  # noqa: PLC0415  (the package imports this module while loading _C)

    store, rank, size = opts.store, opts.group_rank, opts.group_size
    timeout = opts.timeout if isinstance(opts.timeout, datetime.timedelta) else _DEFAULT_TIMEOUT
    if not _all_on_this_host(store, rank, size):
        return dist.ProcessGroupGloo(store, rank, size, timeout=timeout)
    return _C.C10dBackend(store, rank, size, timeout, str(opts.group_id))


def register() -> bool:
    """Registers the backend with torch.distributed once per process (``import atb_ops`` calls it).

    Returns:
        True when the backend is registered (False where torch has no distributed support).
    """
    global _registered
    if _registered:
        return True
    if not dist.is_available():
        return False
    dist.Backend.register_backend(NAME, _create, extended_api=True, devices=["cpu"])
    _registered = True
    return True
