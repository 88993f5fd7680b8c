"""What one size of the collectives bench moves on one rank: the alltoallv layout and its data, and the bytes and
elements a table row reports (nccl-tests' ``size`` and ``count``)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from atb_ops.bench import collectives, workload
from atb_ops.bench.config import BenchConfig


@dataclass
class Plan:
    """One alltoallv size: the matrix, this rank's layout, and the byte count the table reports."""

    size: int
    matrix: list[list[int]]
    layout: workload.RankLayout
    bytes: int  # the busiest rank's bytes
    count: int  # the busiest rank's elements


def plan_for(cfg: BenchConfig, size: int, rank: int) -> Plan:
    """The alltoallv layout of `size` bytes as rank `rank` sees it.

    Args:
        cfg: the run (world size, dtype, pattern, spread).
        size: the row's size in bytes (the busiest rank's, before rounding to whole elements).
        rank: whose layout.

    Returns:
        The count matrix, this rank's layout, and the busiest rank's bytes and elements.
    """
    dtype = workload.DTYPES[cfg.dtype]
    es = workload.element_size(dtype)
    matrix = workload.count_matrix(cfg.world_size, max(size // es, 0), cfg.pattern, cfg.spread)
    moved = workload.busiest_bytes(matrix, es)
    return Plan(size, matrix, workload.rank_layout(matrix, rank), moved, moved // es)


def row_bytes(cfg: BenchConfig, size: int) -> tuple[int, int]:
    """(bytes, elements) a row of the table reports for `size`: nccl-tests' size of the operation."""
    dtype = workload.DTYPES[cfg.dtype]
    if cfg.op == "alltoallv":
        plan = plan_for(cfg, size, 0)
        return plan.bytes, plan.count
    numel = collectives.reported(cfg.op, *collectives.shapes(cfg.op, size, cfg.world_size, dtype))
    return numel * workload.element_size(dtype), numel


@dataclass
class AlltoallvData:
    """One rank's alltoallv payload for one size: `send` filled, on the CPU; each library allocates its output."""

    plan: Plan
    seq: torch.Tensor  # the periodic sequence the payload is cut from
    send: torch.Tensor
    rank: int
    seed: int

    def wrong(self, received: torch.Tensor) -> int:
        """Elements of `received` (1-D, this rank's packed output) that are not what their senders wrote."""
        return workload.count_wrong(received, self.plan.layout, self.rank, self.seed, self.seq)


def alltoallv_data(cfg: BenchConfig, size: int, rank: int) -> AlltoallvData:
    """The layout of `size` and rank `rank`'s payload.

    Args:
        cfg: the run (world size, dtype, pattern, spread, seed).
        size: the row's size in bytes.
        rank: whose payload.

    Returns:
        The plan, the payload's sequence and the filled send buffer.
    """
    dtype = workload.DTYPES[cfg.dtype]
    plan = plan_for(cfg, size, rank)
    seq = workload.sequence_for(plan.matrix, dtype)
    send = torch.empty(plan.layout.send_numel, dtype=dtype)
    workload.fill_send(send, plan.layout, rank, cfg.seed, seq)
    return AlltoallvData(plan, seq, send, rank, cfg.seed)
