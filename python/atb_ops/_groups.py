"""Which backend a torch.distributed group's collectives run on, decided once per group.

CPU tensors take the node-local shared-memory path when every rank of the group is on this host, and
the group's own backend (gloo) otherwise. ATB_OPS_CPU_PATH=shm|group|auto (default auto) forces it.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass

import torch
import torch.distributed as dist

from atb_ops.errors import AtbError

CPU_PATHS = ("auto", "shm", "group")


@dataclass(frozen=True)
class GroupPlan:
    """What one rank knows about a group after the first collective on it."""

    rank: int
    world_size: int
    group_name: str
    job_key: str  # scopes the shm rendezvous to this group of this job
    all_local: bool  # every rank of the group runs on this host


@dataclass(frozen=True)
class Route:
    """The arguments the atb_ops torch ops take to find their communicator."""

    backend: str
    comm_domain: str
    job_key: str
    group_name: str
    rank: int
    world_size: int

    def args(self) -> tuple[str, str, str, str, int, int]:
        return (self.backend, self.comm_domain, self.job_key, self.group_name, self.rank, self.world_size)


_plans: dict[str, GroupPlan] = {}


def _host_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}/{boot}"


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
    dist.all_gather_object(infos, (_host_id(), token), group=g)
    plan = GroupPlan(rank, world_size, name, f"pg:{infos[0][1]}", len({host for host, _ in infos}) == 1)
    _plans[name] = plan
    return plan


def cpu_path() -> str:
    path = os.environ.get("ATB_OPS_CPU_PATH", "auto")
    if path not in CPU_PATHS:
        raise AtbError(f"ATB_OPS_CPU_PATH must be one of {CPU_PATHS}, got {path!r}")
    return path


def route_for(group: dist.ProcessGroup | None, x: torch.Tensor) -> Route:
    """Where a collective on x over group runs."""
    plan = plan_for(group)
    domain = f"pg:{plan.group_name}"
    if x.device.type != "cpu":
        return Route("auto", domain, plan.job_key, plan.group_name, plan.rank, plan.world_size)
    path = cpu_path()
    if path == "shm" and not plan.all_local:
        raise AtbError(f"ATB_OPS_CPU_PATH=shm but group '{plan.group_name}' spans several hosts")
    if path == "shm" or (path == "auto" and plan.all_local):
        return Route("shm", domain, plan.job_key, "", plan.rank, plan.world_size)
    return Route("gloo", "", "", plan.group_name, plan.rank, plan.world_size)
