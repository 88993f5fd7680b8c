"""The collectives bench's rank processes: one ATB operation (by ``--op``) and one gloo group per rank.

Each rank builds the operation once (``atb_ops.Operation``, and the TorchScript class ATB's scripts construct,
``torch.classes.OperationTorch.OperationTorch``), then runs the sizes the launcher sends it one at a time:
ranks_alltoallv for ``--op alltoallv``, ranks_collectives for the others. Rank 0 reduces the per-rank figures
(time: max over ranks; #wrong: sum) and hands each size's row to the parent process.
"""

from __future__ import annotations

import json
from typing import Any

import torch

from atb_ops.bench import ops, rank_group, ranks_alltoallv, ranks_collectives, workload
from atb_ops.bench.config import BenchConfig
from atb_ops.bench.rank_group import BenchRank


def _device_for(backend: str, rank: int) -> torch.device:
    """Where the backend's tensors live: a GPU for nccl, an NPU for hccl where torch_npu is, else the CPU."""
    if backend == "nccl":
        return torch.device("cuda", rank % max(torch.cuda.device_count(), 1))
    if backend == "hccl" and getattr(torch, "npu", None) is not None and torch.npu.is_available():
        return torch.device("npu", rank)
    return torch.device("cpu")  # hccl off-NPU runs on CPU ranks


def run_rank(rank: int, cfg: BenchConfig, results: Any, commands: Any) -> None:
    """The body of one rank (launcher.serve_rank runs it): set up, then run every size it is sent.

    Args:
        rank: this rank.
        cfg: the run.
        results: where messages to the parent go (launcher's protocol).
        commands: (size index, round) pairs to run, None to stop.
    """
    import atb_ops

    rank_group.join(rank, cfg.world_size, threads=1, pin=cfg.bind == "core")
    device = _device_for(cfg.backend, rank)
    me = BenchRank(rank, cfg, results, device)
    if device.type == "cuda":
        import torch.distributed as dist

        torch.cuda.set_device(device)
        me.sync = torch.cuda.synchronize
        if cfg.gloo:  # torch.distributed's column: its nccl backend on the same GPUs
            me.torch_group, me.torch_backend = dist.new_group(backend="nccl"), "nccl"
    collective = ops.COLLECTIVES[cfg.op]
    param = json.dumps({"rank": rank, "rankSize": cfg.world_size, "rankRoot": 0, "backend": cfg.backend,
                        **collective.param})
    op = atb_ops.Operation(collective.operation)
    op.set_param(param)
    # The TorchScript class ATB's scripts construct: the same operator object behind TorchScript's dispatch.
    ts_op = torch.classes.OperationTorch.OperationTorch(collective.operation) if cfg.torchscript else None
    if ts_op is not None:
        ts_op.set_param(param)
    run_size = ranks_alltoallv.run_size if cfg.op == "alltoallv" else ranks_collectives.run_size
    dtype = workload.DTYPES[cfg.dtype]
    rank_group.serve_sizes(rank, results, commands,
                           lambda index, round_no: run_size(me, index, round_no, (op, ts_op), dtype))
