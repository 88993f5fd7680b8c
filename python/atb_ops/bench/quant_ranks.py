"""The ranks of ``bench --op quant_allreduce``: the int8 all-reduce and torch.distributed.all_reduce, per size.

Every rank holds a seeded Gaussian tensor and runs each variant on it: gloo's all_reduce in float32 and float16
(in place, no copy: the strictest baseline), ATB's AllReduceOperation in float32 (backend auto: atb_ops' own
all-reduce, two levels across hosts), and atb_ops.quant.quantized_all_reduce gathering in --out-dtype or in int8.
Each variant's error against the exact float64 sum is measured once (its relative L2 error, and #wrong: the elements
past its bound, bench.quant_bounds), then the variants are warmed up and timed in
--rounds rounds, interleaved, through the bench's timing loop; a round's time is the slowest rank's.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from atb_ops.bench import quant_bounds, rank_group, timing


def run_rank(rank: int, config: dict[str, Any], results: Any, commands: Any) -> None:
    """The body of one rank (launcher.serve_rank runs it): join the group, then run every size it is sent.

    Args:
        rank: this rank.
        config: world_size, sizes, dtype, out_dtype, block_size, warmup, iters, rounds, backend (of the atb_ops
            fp32 AllReduce), gloo (whether gloo's all_reduce rows run).
        results: where messages to the parent go (rank 0 sends the rows).
        commands: (size index, round) pairs, None to stop; each size runs all its rounds.
    """
    world_size = config["world_size"]
    rank_group.join(rank, world_size, threads=max(1, (os.cpu_count() or 1) // world_size))

    def run_size(index: int, round_no: int) -> None:
        for row in _run_size(rank, config, config["sizes"][index]):
            if rank == 0:
                results.put(("row", row))

    rank_group.serve_sizes(rank, results, commands, run_size)


def _run_size(rank: int, config: dict[str, Any], size: int) -> list[dict[str, Any]]:
    """Every variant at `size` bytes of input: its bytes sent, rounds, and error (rank 0 only)."""
    import json

    import torch
    import torch.distributed as dist

    import atb_ops
    from atb_ops import quant

    world_size = config["world_size"]
    dtype = getattr(torch, config["dtype"])
    out_dtype = getattr(torch, config["out_dtype"])
    block = config["block_size"]
    count = size // torch.empty((), dtype=dtype).element_size()

    def make(r: int) -> torch.Tensor:
        return torch.randn(count, generator=torch.Generator().manual_seed(1000 + r)).to(dtype)

    x = make(rank)
    exact, inputs = None, []
    if rank == 0:
        inputs = [make(r) for r in range(world_size)]
        exact = torch.stack([t.double() for t in inputs]).sum(0)
    plan = quant.plan_all_reduce(count, world_size, block)
    ring = 2 * (world_size - 1) / world_size * count
    x32, x16 = x.float(), x.half()
    buf32, buf16 = x32.clone(), x16.clone()  # all_reduce runs in place on these (values grow; no copy)
    reduce_q = functools.partial(quant.quantized_all_reduce, x, block_size=block, out_dtype=out_dtype)
    op = atb_ops.Operation("AllReduceOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "rankRoot": 0, "backend": config["backend"],
                             "allReduceType": "sum", "commDomain": "bench-quant-fp32"}))
    atb_out = torch.empty_like(x32)

    def atb_fp32() -> torch.Tensor:
        op.execute_out([x32], [atb_out])
        return atb_out

    def plain_bound(t: torch.dtype) -> Any:
        return lambda: quant_bounds.plain(inputs, t)

    def quant_bound(again: bool) -> Any:
        return lambda: quant_bounds.quantised(inputs, exact, block, out_dtype, again)

    # (name, call, bytes the busiest rank sends, input of the error's all_reduce or None, its error bound)
    gloo = [
        ("all_reduce fp32 (gloo)", functools.partial(dist.all_reduce, buf32), ring * 4, x32,
         plain_bound(torch.float32)),
        ("all_reduce fp16 (gloo)", functools.partial(dist.all_reduce, buf16), ring * 2, x16,
         plain_bound(torch.float16)),
    ]
    variants = [
        *(gloo if config["gloo"] else []),
        ("atb_ops AllReduce fp32", atb_fp32, ring * 4, None, plain_bound(torch.float32)),
        (f"quant int8, gather {config['out_dtype']}", reduce_q,
         max(plan.bytes_sent(r, out_dtype, False) for r in range(world_size)), None, quant_bound(False)),
        ("quant int8, gather int8", functools.partial(reduce_q, quantize_allgather=True),
         max(plan.bytes_sent(r, out_dtype, True) for r in range(world_size)), None, quant_bound(True)),
    ]
    errors, wrongs = [], []
    for _, fn, _, reduce_input, bound in variants:
        # all_reduce works in place: its result (for the error) comes from one call on a fresh copy.
        out = fn() if reduce_input is None else _all_reduce(reduce_input)
        if rank == 0:
            diff = (out.double() - exact).abs()
            errors.append(float(torch.linalg.vector_norm(diff) / torch.linalg.vector_norm(exact)))
            wrongs.append(int((~(diff <= bound())).sum()))  # NaN counts as wrong
        else:
            errors.append(None)
            wrongs.append(None)
        del out
        for _ in range(config["warmup"]):
            fn()
    # Rounds interleave the variants so each sees the same machine; a round's time is the slowest rank's mean
    # over --iters calls.
    rounds: list[list[float]] = [[] for _ in variants]
    for _ in range(config["rounds"]):
        for i, (_, fn, _, _, _) in enumerate(variants):
            rounds[i].append(rank_group.max_over_ranks(timing.mean_seconds(fn, config["iters"], dist.barrier)))
    return [{"size": size, "count": count, "type": config["dtype"], "variant": name, "bytes": int(nbytes),
             "time_s": min(times), "time_median_s": sorted(times)[len(times) // 2], "times_s": times, "rel_err": rel,
             "wrong": wrong}
            for (name, _, nbytes, _, _), times, rel, wrong in zip(variants, rounds, errors, wrongs, strict=True)]


def _all_reduce(t: Any) -> Any:
    """torch.distributed.all_reduce of a copy of t (for the error; timing runs in place)."""
    import torch.distributed as dist

    y = t.clone()
    dist.all_reduce(y)
    return y
