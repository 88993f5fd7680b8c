"""Which torch.distributed process group the "gloo" backend runs on."""

from __future__ import annotations

import os

import torch.distributed as dist


def resolve_group(rank: int, rank_size: int, comm_domain: str, group_name: str) -> str:
    """Return the c10d group name for a gloo communicator, creating the default group if need be.

    Args:
        rank: The caller's rank in the param.
        rank_size: The param's rankSize.
        comm_domain: The param's commDomain (unused by gloo: the group is the domain).
        group_name: An explicit c10d group name, or "" for the default group.

    Returns:
        The name under which the group is registered with c10d.

    Raises:
        RuntimeError: When no default group exists and MASTER_ADDR/MASTER_PORT are not set.
    """
    del comm_domain
    if group_name:
        return group_name
    if not dist.is_initialized():
        if not (os.environ.get("MASTER_ADDR") and os.environ.get("MASTER_PORT")):
            raise RuntimeError(
                "backend 'gloo' needs torch.distributed: call "
                "torch.distributed.init_process_group('gloo', ...) or set MASTER_ADDR and MASTER_PORT"
            )
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=rank_size)
    return dist.group.WORLD.group_name
