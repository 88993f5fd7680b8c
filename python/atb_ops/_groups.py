"""The communicator a torch.distributed group's collectives run on, resolved once per group and device.

CPU tensors take the node-local shared-memory path when every rank of the group is on this host, and the
group's own backend (gloo) otherwise; ATB_OPS_CPU_PATH=shm|group|auto (default auto) forces it. CUDA tensors
take NCCL. The result is a communicator handle for the torch.ops.atb_ops ops.
"""

from __future__ import annotations

import uuid
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


_plans: dict[str, GroupPlan] = {}
_handles: dict[tuple[str, str], int] = {}
# (the group object, the device) -> handle, filled by comm_for: one dict lookup on the per-call path.
_known: dict[tuple[object, torch.device], int] = {}


def resolve_group(group: dist.ProcessGroup | None) -> dist.ProcessGroup:
    """The group itself, or the default group; raises when torch.distributed is not set up."""
    if not dist.is_available() or not dist.is_initialized():
        raise AtbError("torch.distributed is not initialised: call torch.distributed.init_process_group() first")
    return group if group is not None else dist.group.WORLD


def group_size(group: dist.ProcessGroup | None) -> int:
    return dist.get_world_size(resolve_group(group))


def plan_for(group: dist.ProcessGroup | None) -> GroupPlan:
    """The group's plan; the first call on a group is a collective (every rank must make it)."""
    g = resolve_group(group)
    name = g.group_name
    plan = _plans.get(name)
    if plan is not None:
        return plan
    rank, world_size = dist.get_rank(g), dist.get_world_size(g)
    if rank < 0:
        raise AtbError(f"this process is not a member of group '{name}'")
    token = uuid.uuid4().hex if rank == 0 else ""
    infos: list = [None] * world_size
    dist.all_gather_object(infos, (host_id(), token), group=g)
    plan = GroupPlan(rank, world_size, name, f"pg:{infos[0][1]}", len({host for host, _ in infos}) == 1)
    _plans[name] = plan
    return plan


def forget_handles() -> None:
    """Forgets every group's communicator handle (atb_ops.clear_communicators releases them)."""
    _handles.clear()
    _known.clear()


def cpu_path() -> str:
    """ATB_OPS_CPU_PATH as the native option parser reads it (auto, shm or group)."""
    try:
        return _C.options()["ATB_OPS_CPU_PATH"]
    except RuntimeError as e:
        raise AtbError(str(e)) from None


def known_comm(group: dist.ProcessGroup | None, x: torch.Tensor) -> int | None:
    """The handle comm_for gave for this group and x's device, if it has; never communicates."""
    return _known.get((dist.GroupMember.WORLD if group is None else group, x.device))


def comm_for(group: dist.ProcessGroup | None, x: torch.Tensor) -> int:
    """The communicator handle for collectives on tensors like x over group (made on first use)."""
    g = resolve_group(group)
    key = (g.group_name, str(x.device))
    handle = _handles.get(key)
    if handle is not None:
        _known[(g, x.device)] = handle
        return handle
    plan = plan_for(g)
    domain = f"pg:{plan.group_name}"
    backend, pg = "auto", None
    if x.device.type == "cpu":
        path = cpu_path()
        if path == "shm" and not plan.all_local:
            raise AtbError(f"ATB_OPS_CPU_PATH=shm but group '{plan.group_name}' spans several hosts")
        if path == "shm" or (path == "auto" and plan.all_local):
            backend = "shm"
        else:
            backend, pg = "gloo", g
    try:
        handle = _C.make_comm(backend, plan.rank, plan.world_size, domain, plan.job_key, x.device, pg)
    except RuntimeError as e:
        raise AtbError(str(e)) from None
    _handles[key] = handle
    _known[(g, x.device)] = handle
    return handle


def comm_backend(group: dist.ProcessGroup | None, x: torch.Tensor) -> str:
    """Which backend comm_for chose ("shm", "gloo", "nccl", ...), for tests and the benchmark."""
    return _C.comm_backend(comm_for(group, x))
