"""The ranks of ``bench --op linear_parallel``: LinearParallelOperation fused against matmul + all-reduce, per size.

Every rank holds x [m, k] and its own weight [k, n] (seeded) and runs the fused operation, the unfused matmul +
AllReduceOperation, and (unless --no-gloo) the matmul + gloo's all_reduce. The fused output is checked once against
a float64 golden; then each variant is warmed up and timed in --rounds rounds, interleaved, through the bench's
timing loop; a variant's time is its best round of the slowest rank's mean.
"""

from __future__ import annotations

import json
import os
from typing import Any

from atb_ops.bench import rank_group, timing, workload

UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8}


def _make(rank: int, m: int, k: int, n: int, dtype: Any) -> tuple[Any, Any]:
    """Rank `rank`'s x [m, k] and weight [k, n] (the weight scaled so that outputs stay near 1)."""
    import torch

    gen = torch.Generator().manual_seed(7919 * rank + m)
    x = torch.randn(m, k, generator=gen).to(dtype)
    w = (torch.randn(k, n, generator=gen) / k**0.5).to(dtype)
    return x, w


def _wrong(out: Any, rank: int, world: int, m: int, k: int, n: int, dtype: Any) -> int:
    """Elements of the fused output outside the error bound of the float64 golden."""
    import torch

    want = torch.zeros(m, n, dtype=torch.float64)
    mag = torch.zeros_like(want)
    for r in range(world):
        x, w = _make(r, m, k, n, dtype)
        p = x.double() @ w.double()
        want += p
        mag += p.abs() + (x.double().abs() @ w.double().abs()) * k * 2.0**-23
    u = UNIT_ROUNDOFF[str(dtype).removeprefix("torch.")]
    bound = 2 * u * (mag + want.abs())
    return int(((out.double() - want).abs() > bound).sum())


def run_rank(rank: int, config: dict[str, Any], results: Any, commands: Any) -> None:
    """The body of one rank (launcher.serve_rank runs it): build both operations, then run every size it is sent.

    Args:
        rank: this rank.
        config: world_size, sizes, k, n, dtype, backend, iters, budget, warmup, rounds, gloo.
        results: where messages to the parent go (rank 0 sends the rows).
        commands: (size index, round) pairs, None to stop; each size runs all its rounds.
    """
    import torch

    import atb_ops  # noqa: F401  (OperationTorch)

    world = config["world_size"]
    rank_group.join(rank, world, threads=max(1, (os.cpu_count() or 1) // world))
    common = {"rank": rank, "rankSize": world, "rankRoot": 0, "backend": config["backend"]}
    fused_op = torch.classes.OperationTorch.OperationTorch("LinearParallelOperation")
    fused_op.set_param(json.dumps({**common, "type": 0, "transWeight": False}))
    reduce_op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
    reduce_op.set_param(json.dumps(common))

    def run_size(index: int, round_no: int) -> None:
        row = _run_size(rank, config, config["sizes"][index], fused_op, reduce_op)
        if rank == 0:
            results.put(("row", row))

    rank_group.serve_sizes(rank, results, commands, run_size)


def _run_size(rank: int, config: dict[str, Any], size: int, fused_op: Any, reduce_op: Any) -> dict[str, Any]:
    """One size (the bytes of the [m, n] output): the check, then every variant's best round."""
    import torch
    import torch.distributed as dist

    world = config["world_size"]
    dtype = getattr(torch, config["dtype"])
    k, n = config["k"], config["n"]
    m = max(1, size // (n * workload.element_size(dtype)))
    x, w = _make(rank, m, k, n, dtype)
    out = torch.empty(m, n, dtype=dtype)
    reduced = torch.empty(m, n, dtype=dtype)
    partial = torch.empty(m, n, dtype=dtype)

    def fused() -> None:
        fused_op.execute_out([x, w], [out])

    def unfused() -> None:
        partial.copy_(torch.matmul(x.float(), w.float()))
        reduce_op.execute_out([partial], [reduced])

    def unfused_gloo() -> None:
        partial.copy_(torch.matmul(x.float(), w.float()))
        dist.all_reduce(partial)

    variants = {"fused": fused, "unfused": unfused}
    if config["gloo"]:
        variants["unfused_gloo"] = unfused_gloo
    fused()
    wrong = _wrong(out, rank, world, m, k, n, dtype)
    for fn in variants.values():
        for _ in range(config["warmup"]):
            fn()
    flops = 2.0 * m * k * n
    iters = config["iters"] or max(3, min(200, int(config["budget"] * 20e9 / max(flops, 1.0))))
    best = {name: float("inf") for name in variants}
    for _ in range(config["rounds"]):
        for name, fn in variants.items():
            best[name] = min(best[name], rank_group.max_over_ranks(timing.mean_seconds(fn, iters, dist.barrier)))
    wrong_all = int(rank_group.over_ranks([float(wrong)], dist.ReduceOp.SUM)[0])
    return {"size": size, "m": m, "k": k, "n": n, "iters": iters, "times_s": best, "wrong": wrong_all}
