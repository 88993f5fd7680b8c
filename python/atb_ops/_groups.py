"""The communicator a torch.distributed group's collectives run on, resolved once per group and device.

CPU tensors take the node-local shared-memory path when every rank of the group is on this host; across hosts,
two levels (shared memory within each host, gloo between them, the group itself for what runs among all ranks)
where every host holds the same number of ranks, else the group's own backend (gloo);
ATB_OPS_CPU_PATH=shm|group|auto (default auto) forces it (group: the group's backend alone). CUDA tensors take
NCCL. The result is a communicator handle for the torch.ops.atb_ops ops.
"""

from __future__ import annotations

import uuid
import weakref
from dataclasses import dataclass

import torch
import torch.distributed as dist

from atb_ops import _C
from atb_ops._host import host_id
from atb_ops.errors import AtbError


@dataclass(frozen=True)
class GroupPlan:
    """What one rank knows about a group after the first collective on it."""

    rank: int
    world_size: int
    group_name: str
    job_key: str  # scopes the shm rendezvous to this group of this job
    all_local: bool  # every rank of the group runs on this host
    hosts: tuple[str, ...]  # every rank's host identity (atb_ops._host), in group rank order


# Keyed by the group object itself, never by its name: torch numbers groups again from "0" after
# destroy_process_group, and a re-made group (other ranks, other hosts) must never find the old one's plan.
_plans: weakref.WeakKeyDictionary[dist.ProcessGroup, GroupPlan] = weakref.WeakKeyDictionary()
_handles: weakref.WeakKeyDictionary[dist.ProcessGroup, dict[torch.device, int]] = weakref.WeakKeyDictionary()
# (id of the group, device) -> (the group, weakly; handle): one dict lookup on the per-call path. The weak
# reference guards against an id reused by a later group object.
_known: dict[tuple[int, torch.device], tuple[weakref.ref, int]] = {}
# Handles whose communicator moves data through the group itself (across hosts): torch.distributed's calls on that
# group and atb_ops' meet on one transport, so they keep the caller's order (no worker thread for them).
_on_group: set[int] = set()


def resolve_group(group: dist.ProcessGroup | None) -> dist.ProcessGroup:
    """The group itself, or the default group; raises when torch.distributed is not set up."""
    if not dist.is_available() or not dist.is_initialized():
        raise AtbError("torch.distributed is not initialised: call torch.distributed.init_process_group() first")
    if group is not None and not isinstance(group, dist.ProcessGroup):
        if group is dist.GroupMember.NON_GROUP_MEMBER:  # what new_group() gives the ranks it leaves out
            raise AtbError(f"group: rank {dist.get_rank()} is not a member of this group (torch.distributed.new_group "
                           "returned GroupMember.NON_GROUP_MEMBER here); call its collectives only on its ranks")
        raise AtbError(f"group must be a torch.distributed.ProcessGroup or None, got {type(group).__name__}")
    return group if group is not None else dist.group.WORLD


def group_size(group: dist.ProcessGroup | None) -> int:
    return dist.get_world_size(resolve_group(group))


def plan_for(group: dist.ProcessGroup | None) -> GroupPlan:
    """The group's plan; the first call on a group is a collective (every rank must make it)."""
    g = resolve_group(group)
    name = g.group_name
    plan = _plans.get(g)
    if plan is not None:
        return plan
    rank, world_size = dist.get_rank(g), dist.get_world_size(g)
    if rank < 0:
        raise AtbError(f"this process is not a member of group '{name}'")
    token = uuid.uuid4().hex if rank == 0 else ""
    infos: list = [None] * world_size
    # ATB_OPS_CPU_PATH decides which communicator a rank makes: ranks that differ would wait on different ones.
    dist.all_gather_object(infos, (host_id(), token, cpu_path()), group=g)
    paths = [info[2] for info in infos]
    if len(set(paths)) > 1:
        views = "; ".join(f"rank {r}: {p!r}" for r, p in enumerate(paths))
        raise AtbError(
            f"ranks disagree on ATB_OPS_CPU_PATH for group '{name}' ({views}); it decides which communicator the "
            "group's collectives run on, so every rank must set it alike"
        )
    hosts = tuple(info[0] for info in infos)
    plan = GroupPlan(rank, world_size, name, f"pg:{infos[0][1]}", len(set(hosts)) == 1, hosts)
    _plans[g] = plan
    return plan


def forget_handles() -> None:
    """Forgets every group's plan and communicator handle (atb_ops.clear_communicators releases them)."""
    _plans.clear()
    _handles.clear()
    _known.clear()
    _on_group.clear()


def rides_group(handle: int) -> bool:
    """Whether the communicator of `handle` moves data through its torch.distributed group (between hosts).

    Args:
        handle: A handle comm_for gave.

    Returns:
        True where the group's own calls and the communicator's share one transport, so their order matters.
    """
    return handle in _on_group


def cpu_path() -> str:
    """ATB_OPS_CPU_PATH as the native option parser reads it (auto, shm or group)."""
    try:
        return _C.options()["ATB_OPS_CPU_PATH"]
    except RuntimeError as e:
        raise AtbError(str(e)) from None


def known_comm(group: dist.ProcessGroup | None, x: torch.Tensor) -> int | None:
    """The handle comm_for gave for this group and x's device, if it has; never communicates."""
    g = dist.GroupMember.WORLD if group is None else group
    hit = _known.get((id(g), x.device))
    return hit[1] if hit is not None and hit[0]() is g else None


def comm_for(group: dist.ProcessGroup | None, x: torch.Tensor) -> int:
    """The communicator handle for collectives on tensors like x over group (made on first use)."""
    g = resolve_group(group)
    handle = _handles.get(g, {}).get(x.device)
    if handle is not None:
        _known[(id(g), x.device)] = (weakref.ref(g), handle)
        return handle
    plan = plan_for(g)
    domain = f"pg:{plan.group_name}"
    backend, pg, rank_hosts = "auto", None, []
    if x.device.type == "cpu":
        path = cpu_path()
        if path == "shm" and not plan.all_local:
            raise AtbError(f"ATB_OPS_CPU_PATH=shm but group '{plan.group_name}' spans several hosts")
        if path == "shm" or (path == "auto" and plan.all_local):
            backend = "shm"
        else:
            backend, pg = "gloo", g
            if path == "auto":
                # Across hosts: shared memory within each and the group between them (two levels) where every
                # host holds the same number of ranks (and ATB_OPS_TWO_LEVEL allows), else the group alone.
                rank_hosts = list(plan.hosts)
    try:
        handle = _C.make_comm(backend, plan.rank, plan.world_size, domain, plan.job_key, x.device, pg, rank_hosts)
    except RuntimeError as e:
        raise AtbError(str(e)) from None
    _handles.setdefault(g, {})[x.device] = handle
    _known[(id(g), x.device)] = (weakref.ref(g), handle)
    if pg is not None:
        _on_group.add(handle)
    # The group's communicator goes with the group (its peers learn at once, ERROR_COMM_PEER_LEFT).
    weakref.finalize(g, _release, handle)
    return handle


def _release(handle: int) -> None:
    """Drops a handle whose group went (a no-op once clear_communicators released it)."""
    _C.release_comm(handle)
    _on_group.discard(handle)
    for key, (_, h) in list(_known.items()):
        if h == handle:
            del _known[key]


def comm_backend(group: dist.ProcessGroup | None, x: torch.Tensor) -> str:
    """Which backend comm_for chose ("shm", "gloo", "nccl", ...), for tests and the benchmark."""
    return _C.comm_backend(comm_for(group, x))
