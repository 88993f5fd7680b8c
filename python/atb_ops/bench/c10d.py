"""``python -m atb_ops bench --api c10d``: torch.distributed's own calls on the backend "atb_ops" beside gloo.

The ranks start with a gloo default group (it carries the figures between ranks, as in every bench run) and make
one more group with ``backend="atb_ops"``. Per size each rank runs the same torch.distributed call
(``all_to_all_single`` for ``--op alltoallv``, ``all_reduce``, ``reduce_scatter_tensor``,
``all_gather_into_tensor``, ``broadcast``) on the atb_ops group and then on the gloo group, with the same reused
tensors: checked once (output pre-filled with a sentinel: ``#wrong``), warmed up and timed like every other
column (``atb_ops.bench.timing.time_loop``). Open MPI's column is the usual mpirun job.

The **floor** column is the same call on a group of torch's own backend that moves nothing and completes at once
(``FakeProcessGroup``, backend "fake" of ``torch.testing._internal.distributed.fake_pg``): what torch.distributed
itself costs per call (argument checks, dispatch, work objects). atb_ops' time above it is what the backend adds.
It is not checked (it writes nothing by design).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from atb_ops.bench import collectives, ops, rank_group, workload
from atb_ops.bench.config import BenchConfig
from atb_ops.bench.plan import alltoallv_data, row_bytes
from atb_ops.bench.rank_group import BenchRank


def run_rank(rank: int, cfg: BenchConfig, results: Any, commands: Any) -> None:
    """The body of one rank, as ranks.run_rank (the same arguments) but timing torch.distributed's call: the gloo
    default group, a group on the backend "atb_ops" and one on torch's "fake", then every size it is sent."""
    import torch.distributed as dist

    import atb_ops  # noqa: F401  (registers the backend "atb_ops")

    rank_group.join(rank, cfg.world_size, threads=1, pin=cfg.bind == "core")
    ours = dist.new_group(list(range(cfg.world_size)), backend="atb_ops")
    floor = _floor_group(dist, cfg.world_size)
    me = BenchRank(rank, cfg, results)
    rank_group.serve_sizes(rank, results, commands,
                           lambda index, round_no: _run_size(me, index, round_no, (ours, floor)))


def _floor_group(dist: Any, world_size: int) -> Any:
    """A group of torch's backend that does nothing ("fake"), for the floor column."""
    import torch.testing._internal.distributed.fake_pg  # noqa: F401  (registers backend "fake")

    return dist.new_group(list(range(world_size)), backend="fake")


def _alltoall_buffers(cfg: BenchConfig, size: int, rank: int) -> tuple[Any, ...]:
    """(call builder, check, reset, bytes, count, reused buffers) for all_to_all_single on the bench's
    alltoallv layout."""
    import torch.distributed as dist

    data = alltoallv_data(cfg, size, rank)
    lay, send = data.plan.layout, data.send
    out = torch.empty(lay.recv_numel, dtype=send.dtype)

    def call(group: Any) -> Callable[[], Any]:
        return functools.partial(dist.all_to_all_single, out, send, lay.recv_counts, lay.send_counts, group=group)

    def reset() -> None:
        workload.poison(out)

    return call, lambda: data.wrong(out), reset, data.plan.bytes, data.plan.count, (send, out)


def _collective_buffers(cfg: BenchConfig, size: int, rank: int, dtype: torch.dtype) -> tuple[Any, ...]:
    """(call builder, check, reset, bytes, count, reused buffers) for the other collectives (collectives.py's
    data and goldens)."""
    import torch.distributed as dist

    kind = cfg.op
    data = collectives.rank_data(kind, size, rank, cfg.world_size, dtype)
    nbytes, count = row_bytes(cfg, size)
    x = data.mine.clone()
    out = torch.empty(data.numel_out, dtype=dtype) if kind in ("reduce_scatter", "allgather") else x

    def call(group: Any) -> Callable[[], Any]:
        if kind == "allreduce":
            return functools.partial(dist.all_reduce, x, group=group)
        if kind == "broadcast":
            return functools.partial(dist.broadcast, x, collectives.ROOT, group=group)
        if kind == "allgather":
            return functools.partial(dist.all_gather_into_tensor, out, x, group=group)
        return functools.partial(dist.reduce_scatter_tensor, out, x, group=group)

    def check() -> int:
        return collectives.count_wrong(out, data.want)

    def reset() -> None:
        # all_reduce and broadcast write their input: the checked call starts from the rank's own data.
        x.copy_(data.mine)
        if kind != "broadcast" or rank != collectives.ROOT:
            if out is not x:
                workload.poison(out)
            elif kind == "broadcast":
                workload.poison(x)

    return call, check, reset, nbytes, count, (x,) if out is x else (x, out)


def _run_size(me: BenchRank, index: int, round_no: int, groups: tuple[Any, Any]) -> None:
    """One size: the checked call and the timed loop on the atb_ops group, then torch's floor (unchecked), then
    gloo; rank 0 reports."""
    ours, floor = groups
    cfg = me.cfg
    dtype = workload.DTYPES[cfg.dtype]
    size = cfg.sizes[index]
    if cfg.op == "alltoallv":
        call, check, reset, nbytes, count, reused = _alltoall_buffers(cfg, size, me.rank)
    else:
        call, check, reset, nbytes, count, reused = _collective_buffers(cfg, size, me.rank, dtype)
    torch_call = ops.COLLECTIVES[cfg.op].torch_call
    timed: dict[str, tuple[float, float]] = {}
    for key, group, label in (("atb", ours, "atb_ops"), ("floor", floor, "torch's floor"), ("gloo", None, "gloo")):
        if key == "gloo" and not cfg.gloo:
            timed[key] = (float("nan"), 0)
            continue
        me.progress(f"{workload.format_bytes(size)}: {torch_call} on {label}")
        fn = call(group)
        wrong = 0
        if cfg.check and key != "floor":
            reset()
            fn()
            wrong = check()
        timed[key] = (me.time(fn, reused), wrong)
    me.report(index, round_no, size, nbytes, count, timed)
