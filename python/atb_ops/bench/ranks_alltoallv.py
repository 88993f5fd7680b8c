"""One size of ``--op alltoallv`` on an execute_out rank: AllToAllVV2Operation and everything compared with it.

In this order, each checked once (its output pre-filled with a sentinel where it writes into a reused one) and
then timed: ``execute_out([x, tensorForInferShape], [out])`` through ``atb_ops.Operation``, the same through the
TorchScript class, the same on ``atb_ops.shm_empty`` buffers, the ``atb_ops.distributed`` forms (``all_to_all_v``,
Paddle's ``alltoall_single`` and Paddle/FastMoE's ``global_scatter``, with ``--api distributed``), and
torch.distributed's ``all_to_all_single`` on gloo (CPU tensors) or nccl (CUDA tensors).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import torch

from atb_ops.bench import raw_link, workload
from atb_ops.bench.plan import AlltoallvData, alltoallv_data
from atb_ops.bench.rank_group import BenchRank

NOT_RUN = (float("nan"), 0)  # (seconds, #wrong) of a column this run leaves out


def run_size(me: BenchRank, index: int, round_no: int, ops: tuple[Any, Any], dtype: torch.dtype) -> None:
    """Times size `index` in every column this run has; rank 0 reports the row.

    Args:
        me: this rank.
        index: the size's index in the configuration.
        round_no: the round (carried into the row).
        ops: the ATB operation (atb_ops.Operation) and its TorchScript twin (None with --no-torchscript).
        dtype: the element type.
    """
    import torch.distributed as dist

    cfg, rank = me.cfg, me.rank
    op, ts_op = ops
    execute_out = op.execute_out  # bound once: a method lookup per call would be timed too
    size = cfg.sizes[index]
    me.progress(f"{workload.format_bytes(size)}: atb_ops {cfg.backend}")
    data = alltoallv_data(cfg, size, rank)
    lay = data.plan.layout
    send = data.send.to(me.device)
    out = torch.empty((1, lay.recv_numel), dtype=dtype, device=me.device)
    # tensorForInferShape only has to have the right length: a stride-0 view costs no memory.
    infer = torch.empty(1, dtype=torch.int8, device=me.device).expand(lay.recv_numel)
    op.set_varaintpack_param(json.dumps(lay.pack()))
    inputs, outputs = [send, infer], [out]

    def checked_time(call: Callable[[], Any], result: torch.Tensor, source: torch.Tensor) -> tuple[float, int]:
        """The checked call (`result` starts as a sentinel), then the timed loop: (seconds per call, #wrong)."""
        wrong = 0
        if cfg.check:
            workload.poison(result)
            call()
            me.sync()
            wrong = data.wrong(result.reshape(-1).cpu())
        return me.time(call, (source, result)), wrong

    timed: dict[str, tuple[float, float]] = {"atb": checked_time(functools.partial(execute_out, inputs, outputs),
                                                                 out, send)}
    timed["torchscript"] = NOT_RUN
    if ts_op is not None:
        me.progress(f"{workload.format_bytes(size)}: atb_ops {cfg.backend}, OperationTorch")
        ts_op.set_varaintpack_param(json.dumps(lay.pack()))
        timed["torchscript"] = checked_time(functools.partial(ts_op.execute_out, inputs, outputs), out, send)

    timed["shared"] = NOT_RUN
    if cfg.shared and me.device.type == "cpu" and cfg.backend in ("shm", "auto", "hccl"):
        import atb_ops

        me.progress(f"{workload.format_bytes(size)}: atb_ops {cfg.backend}, shm_empty buffers")
        s_send = atb_ops.shm_empty(lay.send_numel, dtype=dtype)
        s_send.copy_(send)
        s_out = atb_ops.shm_empty(1, lay.recv_numel, dtype=dtype)
        s_inputs, s_outputs = [s_send, infer], [s_out]
        timed["shared"] = checked_time(functools.partial(execute_out, s_inputs, s_outputs), s_out, s_send)
        del s_send, s_out, s_inputs, s_outputs

    if cfg.api:
        timed.update(_time_distributed(me, size, data, send, out))

    timed["gloo"] = NOT_RUN
    if cfg.gloo:
        me.progress(f"{workload.format_bytes(size)}: {me.torch_backend} all_to_all_single")
        # gloo has no int16/bool (nccl no int16): those move as bytes
        as_is = dtype not in (torch.int16, torch.bool)
        scale = 1 if as_is else workload.element_size(dtype)
        g_in = send if as_is else send.view(torch.uint8)
        g_out = out.reshape(-1) if as_is else out.reshape(-1).view(torch.uint8)
        in_splits = [c * scale for c in lay.send_counts]
        out_splits = [c * scale for c in lay.recv_counts]
        gloo_call = functools.partial(dist.all_to_all_single, g_out, g_in, out_splits, in_splits,
                                      group=me.torch_group)
        gloo_wrong = 0
        if cfg.check:
            workload.poison(out)
            gloo_call()
            me.sync()
            gloo_wrong = data.wrong(out.reshape(-1).cpu())
        timed["gloo"] = (me.time(gloo_call, (g_in, g_out)), gloo_wrong)

    raw_link.add_column(me, size, timed)
    me.report(index, round_no, size, data.plan.bytes, data.plan.count, timed)


def _time_distributed(me: BenchRank, size: int, data: AlltoallvData, send: torch.Tensor,
                      out: torch.Tensor) -> dict[str, tuple[float, float]]:
    """The atb_ops.distributed columns (--api distributed): all_to_all_v, alltoall_single, global_scatter.

    Returns:
        Column key -> (seconds per call on this rank, #wrong here).
    """
    from atb_ops import distributed as ad

    cfg, lay = me.cfg, data.plan.layout
    timed: dict[str, tuple[float, float]] = {}
    me.progress(f"{workload.format_bytes(size)}: atb_ops.distributed.all_to_all_v")
    dist_call = functools.partial(ad.all_to_all_v, send, lay.send_counts, lay.sdispls, lay.recv_counts, lay.rdispls)
    dist_wrong = data.wrong(dist_call().cpu()) if cfg.check else 0  # a fresh output per call: no sentinel needed
    timed["dist"] = (me.time(dist_call, (send,)), dist_wrong)
    # Paddle's alltoall_single splits rows: one element per row here, straight into `out`.
    me.progress(f"{workload.format_bytes(size)}: atb_ops.distributed.alltoall_single")
    flat_out = out.view(-1)
    single_call = functools.partial(ad.alltoall_single, flat_out, send, lay.recv_counts, lay.send_counts)
    single_wrong = 0
    if cfg.check:  # the layouts are packed in rank order, as alltoall_single packs rows
        workload.poison(out)
        single_call()
        single_wrong = data.wrong(flat_out.cpu())
    timed["dist_single"] = (me.time(single_call, (send, flat_out)), single_wrong)
    timed["dist_scatter"] = _time_global_scatter(me, size, data, send)
    return timed


def _halves(count: int) -> list[int]:
    """A rank's block for one peer split between its 2 experts."""
    return [count // 2, count - count // 2]


def _rank_major(y: torch.Tensor, counts: list[int], n: int, experts: int) -> torch.Tensor:
    """global_scatter's expert-major rows (expert e, then source rank r; block sizes counts[r * experts + e])
    put back rank-major, for the check."""
    starts, pos = {}, 0
    for e in range(experts):
        for r in range(n):
            starts[(r, e)] = pos
            pos += counts[r * experts + e]
    blocks = [y.narrow(0, starts[(r, e)], counts[r * experts + e]) for r in range(n) for e in range(experts)]
    return torch.cat(blocks) if blocks else y


def _time_global_scatter(me: BenchRank, size: int, data: AlltoallvData, send: torch.Tensor) -> tuple[float, float]:
    """Paddle/FastMoE's global_scatter moving the same bytes: one element per row, every rank's block for a
    peer split between its 2 experts; checked after putting the expert-major result back in rank order."""
    from atb_ops import distributed as ad

    lay = data.plan.layout
    me.progress(f"{workload.format_bytes(size)}: atb_ops.distributed.global_scatter")
    local = [c for count in lay.send_counts for c in _halves(count)]
    global_ = [c for count in lay.recv_counts for c in _halves(count)]
    call = functools.partial(ad.global_scatter, send, local, global_)
    wrong = 0
    if me.cfg.check:
        wrong = data.wrong(_rank_major(call().reshape(-1).cpu(), global_, len(lay.recv_counts), 2))
    return me.time(call, (send,)), wrong
