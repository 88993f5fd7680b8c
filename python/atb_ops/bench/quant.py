"""`python -m atb_ops bench --op quant_allreduce`: the int8 all-reduce against torch.distributed.all_reduce.

For each size, every rank holds a seeded Gaussian tensor of `count = size / element_size(--dtype)` elements
and the same tensor goes through:

- ``all_reduce fp32`` / ``all_reduce fp16``: torch.distributed.all_reduce on the gloo group (the tensor
  cast to float32 / float16), timed in place with no copy (the strictest baseline);
- ``quant int8, gather <out>``: atb_ops.quant.quantized_all_reduce (int8 all-to-all + scales, float32
  reduce, all-gather in --out-dtype) on the node-local path (ATB_OPS_CPU_PATH, default auto: shm);
- ``quant int8, gather int8``: the same with quantize_allgather=True.

Columns: ``bytes`` each rank sends per call (the busiest rank; for all_reduce the bandwidth-optimal
2 (n-1)/n * count * element_size that gloo's ring sends), ``xfp16`` that over the fp16 all_reduce's bytes,
``time`` the mean wall time per call (the slowest rank's), ``xfp32`` the fp32 all_reduce's time over this
row's (> 1: faster than fp32), ``rel_err`` the relative L2 error against the exact float64 sum.

The ranks are CPU processes on this host (spawned, loopback only). Timings on a shared machine are noisy:
each variant runs --rounds rounds of --iters calls, interleaved with the other variants, and the table shows
the best round (the least disturbed by other processes) and the median one.
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing as mp
import os
import time
import uuid
from typing import Any

from atb_ops._launch import free_port, run_ranks
from atb_ops.bench import workload

DTYPES = ("float16", "bfloat16", "float32")
DEFAULT_SIZES = ("1M", "16M", "64M")


def _time_calls(fn, warmup: int, iters: int) -> float:
    """Mean seconds per call of fn on this rank, timed from a barrier after the warm-up calls."""
    import torch.distributed as dist

    for _ in range(warmup):
        fn()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - start) / max(iters, 1)


def _rank_main(rank: int, world_size: int, env: dict[str, str], args: dict[str, Any], results: mp.Queue) -> None:
    os.environ.update(env)
    try:
        import torch
        import torch.distributed as dist

        from atb_ops import quant

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{env['MASTER_PORT']}", rank=rank, world_size=world_size
        )
        dtype = getattr(torch, args["dtype"])
        out_dtype = getattr(torch, args["out_dtype"])
        block = args["block_size"]
        rows = []
        for size in args["sizes"]:
            count = size // torch.empty((), dtype=dtype).element_size()

            def make(r: int, count: int = count) -> torch.Tensor:
                return torch.randn(count, generator=torch.Generator().manual_seed(1000 + r)).to(dtype)

            x = make(rank)
            exact = None
            if rank == 0:
                exact = torch.zeros(count, dtype=torch.float64)
                for r in range(world_size):
                    exact += make(r).double()
            plan = quant.plan_all_reduce(count, world_size, block)
            ring = 2 * (world_size - 1) / world_size * count
            x32, x16 = x.float(), x.half()
            buf32, buf16 = x32.clone(), x16.clone()  # all_reduce runs in place on these (values grow; no copy)
            reduce_q = functools.partial(quant.quantized_all_reduce, x, block_size=block, out_dtype=out_dtype)
            variants = [
                ("all_reduce fp32 (gloo)", functools.partial(dist.all_reduce, buf32), ring * 4, x32),
                ("all_reduce fp16 (gloo)", functools.partial(dist.all_reduce, buf16), ring * 2, x16),
                (
                    f"quant int8, gather {args['out_dtype']}",
                    reduce_q,
                    max(plan.bytes_sent(r, out_dtype, False) for r in range(world_size)),
                    None,
                ),
                (
                    "quant int8, gather int8",
                    functools.partial(reduce_q, quantize_allgather=True),
                    max(plan.bytes_sent(r, out_dtype, True) for r in range(world_size)),
                    None,
                ),
            ]
            errors = []
            for _, fn, _, reduce_input in variants:
                # all_reduce works in place: its result (for the error) comes from one call on a fresh copy.
                out = fn() if reduce_input is None else _all_reduce(reduce_input)
                errors.append(
                    float(torch.linalg.vector_norm(out.double() - exact) / torch.linalg.vector_norm(exact))
                    if rank == 0
                    else None
                )
                del out
                for _ in range(args["warmup"]):
                    fn()
            # Rounds interleave the variants so each sees the same machine; a round's time is the slowest
            # rank's mean over --iters calls.
            rounds: list[list[float]] = [[] for _ in variants]
            for _ in range(args["rounds"]):
                for i, (_, fn, _, _) in enumerate(variants):
                    seconds = torch.tensor([_time_calls(fn, 0, args["iters"])], dtype=torch.float64)
                    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
                    rounds[i].append(float(seconds))
            for (name, _, nbytes, _), times, rel in zip(variants, rounds, errors, strict=True):
                rows.append(
                    {
                        "size": size,
                        "count": count,
                        "variant": name,
                        "bytes": int(nbytes),
                        "time_s": min(times),
                        "time_median_s": sorted(times)[len(times) // 2],
                        "times_s": times,
                        "rel_err": rel,
                    }
                )
            del x, x32, x16, buf32, buf16, exact
        dist.destroy_process_group()
        results.put((rank, None, rows))
    except Exception as e:  # noqa: BLE001 - reported by the parent, with the rank
        import traceback

        results.put((rank, f"{type(e).__name__}: {e}\n{traceback.format_exc()}", None))


def _all_reduce(t):
    """torch.distributed.all_reduce of a copy of t (for the error; timing runs in place)."""
    import torch.distributed as dist

    y = t.clone()
    dist.all_reduce(y)
    return y


def run(
    world_size: int = 2,
    sizes: list[int] | None = None,
    dtype: str = "float32",
    out_dtype: str = "float16",
    block_size: int = 128,
    warmup: int = 1,
    iters: int = 5,
    rounds: int = 3,
    path: str = "auto",
    thp: bool = False,
    timeout_s: float = 600.0,
) -> list[dict[str, Any]]:
    """Spawn the ranks, run every variant at every size, return rank 0's rows with ratios added.

    Raises:
        RuntimeError: When a rank failed or did not finish within timeout_s.
    """
    sizes = workload.parse_sizes(",".join(DEFAULT_SIZES)) if sizes is None else sizes
    env = {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "ATB_OPS_JOB_ID": f"bench-quant-{uuid.uuid4().hex}",
        "ATB_OPS_TIMEOUT": str(int(timeout_s)),
        "ATB_OPS_CPU_PATH": path,
    }
    if thp:
        env["THP_MEM_ALLOC_ENABLE"] = "1"  # torch's CPU allocator asks for transparent huge pages
    args = {
        "sizes": sizes,
        "dtype": dtype,
        "out_dtype": out_dtype,
        "block_size": block_size,
        "warmup": warmup,
        "iters": iters,
        "rounds": rounds,
    }
    got = run_ranks(_rank_main, world_size, (env, args), timeout_s)
    rows = got[0]
    for size in sizes:
        same = [r for r in rows if r["size"] == size]
        fp16 = next(r for r in same if r["variant"].startswith("all_reduce fp16"))
        fp32 = next(r for r in same if r["variant"].startswith("all_reduce fp32"))
        for r in same:
            r["bytes_vs_fp16"] = r["bytes"] / fp16["bytes"]
            r["speedup_vs_fp32"] = fp32["time_s"] / r["time_s"]
    return rows


def format_table(
    rows: list[dict[str, Any]],
    world_size: int,
    dtype: str,
    out_dtype: str,
    block_size: int,
    path: str = "auto",
    thp: bool = False,
) -> str:
    lines = [
        f"# quant_allreduce: {world_size} CPU ranks, input {dtype}, block_size {block_size}, out_dtype {out_dtype}, "
        f"quant path {path}{', THP' if thp else ''}",
        "# bytes: sent per rank per call (busiest rank); xfp16: bytes / fp16 all_reduce bytes;",
        "# time: best round (median in brackets); xfp32: fp32 all_reduce time / this time (> 1 is faster);",
        "# rel_err: L2 error against the exact float64 sum",
        f"{'size':>10} {'count':>10}  {'variant':<28} {'bytes':>11} {'xfp16':>6} {'time(ms)':>9} {'(median)':>9} "
        f"{'xfp32':>6} {'rel_err':>9}",
    ]
    for r in rows:
        lines.append(
            f"{r['size']:>10} {r['count']:>10}  {r['variant']:<28} {r['bytes']:>11} {r['bytes_vs_fp16']:>6.3f} "
            f"{r['time_s'] * 1e3:>9.2f} {'(' + format(r['time_median_s'] * 1e3, '.2f') + ')':>9} "
            f"{r['speedup_vs_fp32']:>6.2f} {r['rel_err']:>9.2e}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m atb_ops bench --op quant_allreduce [options]`` or this module's main."""
    parser = argparse.ArgumentParser(
        prog="python -m atb_ops bench --op quant_allreduce",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--op", default="quant_allreduce", choices=["quant_allreduce"])
    parser.add_argument("--world-size", "-n", type=int, default=2, help="ranks on this host (default 2)")
    parser.add_argument("--sizes", nargs="+", default=[",".join(DEFAULT_SIZES)],
                        help="bytes of the input, as `python -m atb_ops bench`: 1M,16M or 1M 16M or LO:HI[:FACTOR]")
    parser.add_argument("--dtype", default="float32", choices=DTYPES, help="input dtype (default float32)")
    parser.add_argument("--out-dtype", default="float16", choices=DTYPES)
    parser.add_argument("--block-size", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=1, help="untimed calls per variant and size")
    parser.add_argument("--iters", type=int, default=5, help="timed calls per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over all variants; the best one is reported")
    parser.add_argument(
        "--path",
        default="auto",
        choices=["auto", "shm", "group"],
        help="ATB_OPS_CPU_PATH for the quantised variants (group: the gloo group itself)",
    )
    parser.add_argument(
        "--thp", action="store_true", help="THP_MEM_ALLOC_ENABLE=1 in the ranks: torch's CPU allocator uses huge pages"
    )
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    if args.world_size < 1:
        parser.error(f"--world-size must be >= 1, got {args.world_size}")
    try:
        sizes = workload.parse_sizes(",".join(args.sizes))
    except ValueError as e:
        parser.error(str(e))
    rows = run(
        args.world_size,
        sizes,
        args.dtype,
        args.out_dtype,
        args.block_size,
        args.warmup,
        args.iters,
        args.rounds,
        args.path,
        args.thp,
    )
    print(format_table(rows, args.world_size, args.dtype, args.out_dtype, args.block_size, args.path, args.thp))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "world_size": args.world_size,
                    "dtype": args.dtype,
                    "out_dtype": args.out_dtype,
                    "block_size": args.block_size,
                    "rows": rows,
                },
                f,
                indent=2,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
