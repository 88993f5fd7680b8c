"""One size of ``--op allreduce / reduce_scatter / allgather / broadcast`` on an execute_out rank.

In this order, each checked against ``collectives.expected`` (what it writes starts as a sentinel; a broadcast
root keeps its data) and then timed: the ATB operation through ``atb_ops.Operation``, through the TorchScript
class, on ``atb_ops.shm_empty`` buffers, ``atb_ops.distributed`` (``--api distributed``), and torch.distributed's own
call on gloo (CPU tensors) or nccl (CUDA tensors).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch

from atb_ops.bench import collectives, raw_link, workload
from atb_ops.bench.plan import row_bytes
from atb_ops.bench.rank_group import BenchRank


def run_size(me: BenchRank, index: int, round_no: int, ops: tuple[Any, Any], dtype: torch.dtype) -> None:
    """Times size `index` in every column this run has; rank 0 reports the row (the arguments are
    ranks_alltoallv.run_size's: ranks.run_rank calls one or the other)."""
    import torch.distributed as dist

    import atb_ops
    from atb_ops import distributed as ad

    cfg, rank = me.cfg, me.rank
    op, ts_op = ops
    execute_out = op.execute_out
    size = cfg.sizes[index]
    n = cfg.world_size
    kind = cfg.op
    data = collectives.rank_data(kind, size, rank, n, dtype)
    nbytes, count = row_bytes(cfg, size)
    mine = data.mine.to(me.device)

    def buffers(empty: Callable[..., torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(x, out) for the ATB call; broadcast works in place on x (no output)."""
        x = empty(data.numel_in, dtype=dtype)
        x.copy_(mine)
        if kind == "broadcast":
            return x, None
        return x, empty(n, data.numel_in, dtype=dtype) if kind == "allgather" else empty(data.numel_out, dtype=dtype)

    def checked(call: Callable[[], Any], got: Callable[[], torch.Tensor], what: str,
                reused: Sequence[torch.Tensor | None]) -> tuple[float, int]:
        """The checked call (what it writes starts as a sentinel; a broadcast root keeps its data), then
        the timing on the `reused` buffers (None entries: none)."""
        me.progress(f"{workload.format_bytes(size)}: {what}")
        wrong = 0
        if cfg.check:
            if kind != "broadcast" or rank != collectives.ROOT:
                workload.poison(got())
            call()
            me.sync()
            wrong = collectives.count_wrong(got(), data.want)
        return me.time(call, [b for b in reused if b is not None]), wrong

    timed: dict[str, tuple[float, float]] = {}
    x, out = buffers(functools.partial(torch.empty, device=me.device))
    result = x if out is None else out
    timed["atb"] = checked(functools.partial(execute_out, [x], [] if out is None else [out]), lambda: result,
                           f"atb_ops {cfg.backend}", (x, out))
    if ts_op is not None:
        ts_call = functools.partial(ts_op.execute_out, [x], [] if out is None else [out])
        timed["torchscript"] = checked(ts_call, lambda: result, f"atb_ops {cfg.backend}, OperationTorch", (x, out))
    if cfg.shared and me.device.type == "cpu" and cfg.backend in ("shm", "auto", "hccl"):
        s_x, s_out = buffers(atb_ops.shm_empty)
        s_result = s_x if s_out is None else s_out
        s_call = functools.partial(execute_out, [s_x], [] if s_out is None else [s_out])
        timed["shared"] = checked(s_call, lambda: s_result, f"atb_ops {cfg.backend}, shm_empty buffers", (s_x, s_out))
        del s_x, s_out, s_result, s_call
    if cfg.api:
        calls = {"allreduce": lambda: ad.all_reduce(mine), "reduce_scatter": lambda: ad.reduce_scatter(mine),
                 "allgather": lambda: ad.all_gather(mine), "broadcast": lambda: ad.broadcast(mine, collectives.ROOT)}
        last = [torch.empty(0, dtype=dtype)]  # the API returns a fresh tensor per call

        def d_call() -> None:
            last[0] = calls[kind]()

        timed["dist"] = checked(d_call, lambda: last[0], f"atb_ops.distributed, {kind}", (mine,))
    if cfg.gloo:
        g_x, g_out = buffers(functools.partial(torch.empty, device=me.device))
        group = me.torch_group
        if kind == "allreduce":
            # gloo reduces in place: checked once from the input, then timed reducing the result again.
            me.progress(f"{workload.format_bytes(size)}: {me.torch_backend} all_reduce")
            g_wrong = 0
            if cfg.check:
                dist.all_reduce(g_x, group=group)
                me.sync()
                g_wrong = collectives.count_wrong(g_x, data.want)
            timed["gloo"] = (me.time(functools.partial(dist.all_reduce, g_x, group=group), (g_x,)), g_wrong)
        else:
            if kind == "broadcast":
                g_call, g_result = functools.partial(dist.broadcast, g_x, collectives.ROOT, group=group), g_x
            elif kind == "allgather":
                g_call = functools.partial(dist.all_gather_into_tensor, g_out.view(-1), g_x, group=group)
                g_result = g_out
            else:
                g_call, g_result = functools.partial(dist.reduce_scatter_tensor, g_out, g_x, group=group), g_out
            timed["gloo"] = checked(g_call, lambda: g_result, f"{me.torch_backend}, {kind}", (g_x, g_out))
    raw_link.add_column(me, size, timed)
    me.report(index, round_no, size, nbytes, count, timed)
