"""The torch.distributed backend "atb_ops": ``dist.init_process_group("atb_ops")`` on CPU ranks.

``import atb_ops`` registers it (``torch.distributed.Backend.register_backend``, CPU tensors). Every process
group made with ``backend="atb_ops"`` gets a ``atb_ops._C.C10dBackend``: torch.distributed's collectives run
through an atb_ops communicator of the group's ranks, each call checked across ranks before any data moves:
shared memory when every rank of the group is on this host; across hosts shared memory within each and gloo
groups made from the same store between them, so a lost host is named by rank and host, within the group's
timeout or ``ATB_OPS_TIMEOUT`` where that is set and shorter. Under ``python -m atb_ops run``, backend "hccl"
groups on CPU use it.
"""

from __future__ import annotations

import datetime
from typing import Any

import torch.distributed as dist

NAME = "atb_ops"
_DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)  # torch.distributed's own default
_registered = False


def _create(opts: Any, backend_options: Any) -> dist.ProcessGroup:
    """torch's creator of the backend of one process group (extended API).

    Args:
        opts: torch's ``_DistributedBackendOptions``: store, group_rank, group_size, timeout, group_id.
        backend_options: ``pg_options`` from ``init_process_group``/``new_group`` (unused).

    Returns:
        An ``atb_ops._C.C10dBackend``: shared memory where every rank is on this host, else shared memory within
        each host and gloo between them (on the group's store), as ATB's operators run across hosts.

    Raises:
        torch.distributed.DistBackendError: A peer did not join within the group's timeout, or died.
        RuntimeError: The group's ranks disagree on its size (the message names both), or the shared
            memory could not be set up.
    """
    from atb_ops import _C  # noqa: PLC0415  (the package imports this module while loading _C)

    store, rank, size = opts.store, opts.group_rank, opts.group_size
    timeout = opts.timeout if isinstance(opts.timeout, datetime.timedelta) else _DEFAULT_TIMEOUT
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
