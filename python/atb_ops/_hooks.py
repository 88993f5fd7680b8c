"""What only Python can give the native core: the job's torch.distributed store and gloo groups.

The bootstrap (csrc/comm/bootstrap/) exchanges communicator set-up bytes through the store of the default
process group when there is one, and the "gloo" backend builds one gloo group per commDomain on that store.
torch ships no gloo headers, so the group itself is constructed through torch.distributed's own binding.
"""

from __future__ import annotations

import os
from datetime import timedelta
from types import ModuleType

import torch.distributed as dist


def job_store(required: bool = False) -> dist.Store | None:
    """The default process group's store, or None when the job has no default group.

    Args:
        required: Raise instead of returning None.

    Returns:
        The store, or None.

    Raises:
        RuntimeError: When `required` and there is no default group.
    """
    if dist.is_available() and dist.is_initialized():
        return dist.distributed_c10d._get_default_store()
    if required:
        raise RuntimeError("torch.distributed has no default process group")
    return None


def make_gloo(prefix: str, rank: int, size: int, timeout_s: float) -> dist.ProcessGroupGloo:
    """A gloo backend of `size` ranks meeting on the job's store under `prefix`.

    Without a default group, one is first made from MASTER_ADDR/MASTER_PORT (env://) with this rank and
    size, as torch.distributed's own scripts do.

    Args:
        prefix: Store key prefix, unique per (commDomain, rankSize, generation).
        rank: This rank in the new group.
        size: Ranks in the new group.
        timeout_s: ATB_OPS_TIMEOUT, for gloo's own operations.

    Returns:
        A ProcessGroupGloo backend.

    Raises:
        RuntimeError: When there is no default group and MASTER_ADDR/MASTER_PORT are not set.
    """
    if not dist.is_initialized():
        if not (os.environ.get("MASTER_ADDR") and os.environ.get("MASTER_PORT")):
            raise RuntimeError(
                "backend 'gloo' needs torch.distributed: call torch.distributed.init_process_group('gloo', ...) "
                "or set MASTER_ADDR and MASTER_PORT"
            )
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=size)
    store = dist.PrefixStore(prefix, job_store(required=True))
    return dist.ProcessGroupGloo(store, rank, size, timedelta(seconds=timeout_s))


def install(native: ModuleType) -> None:
    """Hands both hooks to atb_ops._C."""
    native.set_store_provider(job_store)
    native.set_gloo_factory(make_gloo)
