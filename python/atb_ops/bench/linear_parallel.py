"""`python -m atb_ops bench --op linear_parallel`: LinearParallelOperation (matmul fused with its all-reduce)
against the same work unfused.

Every rank holds x [m, k] and its own weight [k, n] (seeded, --dtype), and per size (the bytes of the [m, n]
output, nccl-tests' ``size``) runs:

- ``fused``: ``LinearParallelOperation`` type LINEAR_ALL_REDUCE, ``execute_out([x, w], [out])`` with reused
  buffers, on ``--backend`` (default shm);
- ``unfused``: ``torch.matmul`` then ``AllReduceOperation.execute_out`` on the same backend (the matmul in
  float32, cast to --dtype: the fastest matmul torch has on a CPU; torch's own 16-bit CPU matmul is ~60x
  slower here and would flatter the fused column);
- ``unfused gloo``: the same matmul, then ``torch.distributed.all_reduce`` on the gloo group (``--no-gloo``
  skips it).

Columns: ``time`` the mean per call (max over ranks) of the best of --rounds rounds (the variants alternate);
``TFLOP/s`` the matmul's 2mkn per call over that time; ``busbw`` the all-reduce's bus bandwidth (size/time *
2(n-1)/n, nccl-tests' formula); ``speedup`` unfused time over fused time (> 1: fused is faster); ``#wrong`` the
fused output's elements outside the bound of a float64 golden (the sum over ranks of x_r @ w_r).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from typing import Any

from atb_ops._launch import free_port, run_ranks
from atb_ops.bench import workload

DTYPES = ("float16", "bfloat16")
DEFAULT_SIZES = "64K:16M"
UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8}


def _make(rank: int, m: int, k: int, n: int, dtype: Any) -> tuple[Any, Any]:
    import torch

    gen = torch.Generator().manual_seed(7919 * rank + m)
    x = torch.randn(m, k, generator=gen).to(dtype)
    w = (torch.randn(k, n, generator=gen) / k**0.5).to(dtype)
    return x, w


def _mean_call(fn: Any, iters: int) -> float:
    """The slowest rank's mean seconds per call of fn, timed from a barrier."""
    import torch
    import torch.distributed as dist

    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    seconds = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
    return float(seconds)


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


def _rank_main(rank: int, world: int, env: dict[str, str], args: dict[str, Any], results: Any) -> None:
    os.environ.update(env)
    try:
        import torch
        import torch.distributed as dist

        import atb_ops  # noqa: F401  (OperationTorch)

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{env['MASTER_PORT']}", rank=rank,
                                world_size=world)
        dtype = getattr(torch, args["dtype"])
        k, n, backend = args["k"], args["n"], args["backend"]
        common = {"rank": rank, "rankSize": world, "rankRoot": 0, "backend": backend}
        fused_op = torch.classes.OperationTorch.OperationTorch("LinearParallelOperation")
        fused_op.set_param(json.dumps({**common, "type": 0, "transWeight": False}))
        reduce_op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
        reduce_op.set_param(json.dumps(common))
        rows = []
        for size in args["sizes"]:
            m = max(1, size // (n * workload.element_size(dtype)))
            x, w = _make(rank, m, k, n, dtype)
            out = torch.empty(m, n, dtype=dtype)
            reduced = torch.empty(m, n, dtype=dtype)
            partial = torch.empty(m, n, dtype=dtype)

            def fused(x=x, w=w, out=out) -> None:
                fused_op.execute_out([x, w], [out])

            def unfused(x=x, w=w, partial=partial, reduced=reduced) -> None:
                partial.copy_(torch.matmul(x.float(), w.float()))
                reduce_op.execute_out([partial], [reduced])

            def unfused_gloo(x=x, w=w, partial=partial) -> None:
                partial.copy_(torch.matmul(x.float(), w.float()))
                dist.all_reduce(partial)

            variants = {"fused": fused, "unfused": unfused}
            if args["gloo"]:
                variants["unfused_gloo"] = unfused_gloo
            fused()
            wrong = _wrong(out, rank, world, m, k, n, dtype)
            for fn in variants.values():
                for _ in range(args["warmup"]):
                    fn()
            flops = 2.0 * m * k * n
            iters = args["iters"] or max(3, min(200, int(args["budget"] * 20e9 / max(flops, 1.0))))
            best = {name: float("inf") for name in variants}
            for _ in range(args["rounds"]):
                for name, fn in variants.items():
                    best[name] = min(best[name], _mean_call(fn, iters))
            wrong_all = torch.tensor([wrong], dtype=torch.int64)
            dist.all_reduce(wrong_all)
            rows.append({"size": size, "m": m, "k": k, "n": n, "iters": iters, "times_s": best,
                         "wrong": int(wrong_all)})
        dist.destroy_process_group()
        results.put((rank, None, rows))
    except Exception as e:  # noqa: BLE001 - reported by the parent, with the rank
        import traceback

        results.put((rank, f"{type(e).__name__}: {e}\n{traceback.format_exc()}", None))


def format_table(rows: list[dict[str, Any]], world: int, dtype: str, backend: str) -> str:
    """The nccl-tests-style table of rank 0's rows."""
    bus = 2 * (world - 1) / world
    names = list(rows[0]["times_s"]) if rows else []
    head = f"{'size':>9} {'m':>6} {'k':>5} {'n':>5} {'type':>8}"
    for name in names:
        head += f" | {name + ' us':>17} {'TFLOP/s':>7} {'busbw':>6}"
    head += f" | {'speedup':>7} {'#wrong':>6}"
    lines = [
        f"# linear_parallel: LinearParallelOperation LINEAR_ALL_REDUCE vs matmul + all-reduce, {world} CPU ranks, "
        f"backend {backend}, {dtype}",
        "# time: mean per call, max over ranks, best round; TFLOP/s = 2mkn/time; busbw (GB/s) = size/time * "
        "2(n-1)/n; speedup = unfused time / fused time",
        head,
    ]
    for r in rows:
        line = f"{workload.format_bytes(r['size']):>9} {r['m']:>6} {r['k']:>5} {r['n']:>5} {dtype:>8}"
        flops = 2.0 * r["m"] * r["k"] * r["n"]
        for name in names:
            t = r["times_s"][name]
            line += f" | {t * 1e6:>17.1f} {flops / t / 1e12:>7.3f} {r['size'] / t / 1e9 * bus:>6.2f}"
        line += f" | {r['times_s']['unfused'] / r['times_s']['fused']:>7.2f} {r['wrong']:>6}"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m atb_ops bench --op linear_parallel [options]``."""
    parser = argparse.ArgumentParser(prog="python -m atb_ops bench --op linear_parallel", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--op", default="linear_parallel", choices=["linear_parallel"])
    parser.add_argument("--world-size", "-n", type=int, default=2, help="ranks on this host (default 2)")
    parser.add_argument("--backend", "-b", default="shm", choices=["shm", "gloo", "lcoc", "hccl", "auto"],
                        help="the backend of both atb_ops operations (default shm)")
    parser.add_argument("--sizes", "-s", default=DEFAULT_SIZES,
                        help=f"output bytes per rank: list 64K,1M, range LO:HI (x4) or LO:HI:FACTOR (default "
                             f"{DEFAULT_SIZES})")
    parser.add_argument("--k", type=int, default=1024, help="the matmul's k (default 1024)")
    parser.add_argument("--n", type=int, default=1024, help="the matmul's n (default 1024)")
    parser.add_argument("--dtype", "-d", default="bfloat16", choices=DTYPES)
    parser.add_argument("--iters", "-i", type=int, default=0, help="timed calls per round (default: by size)")
    parser.add_argument("--budget", type=float, default=0.5, help="seconds of calls per round when --iters is 0")
    parser.add_argument("--warmup", "-w", type=int, default=2)
    parser.add_argument("--rounds", "-r", type=int, default=3, help="rounds; each variant's best is reported")
    parser.add_argument("--no-gloo", action="store_true", help="skip the torch.distributed (gloo) column")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args(argv)
    if args.world_size < 1 or args.k < 1 or args.n < 1:
        parser.error("--world-size, --k and --n must be >= 1")
    try:
        sizes = workload.parse_sizes(args.sizes)
    except ValueError as e:
        parser.error(str(e))
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
           "ATB_OPS_JOB_ID": f"bench-lp-{uuid.uuid4().hex}", "ATB_OPS_TIMEOUT": str(int(min(args.timeout, 600))),
           "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // args.world_size))}
    rank_args = {"sizes": sizes, "k": args.k, "n": args.n, "dtype": args.dtype, "backend": args.backend,
                 "iters": args.iters, "budget": args.budget, "warmup": args.warmup, "rounds": args.rounds,
                 "gloo": not args.no_gloo}
    rows = run_ranks(_rank_main, args.world_size, (env, rank_args), args.timeout)[0]
    print(format_table(rows, args.world_size, args.dtype, args.backend), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"config": {**rank_args, "world_size": args.world_size}, "rows": rows}, f, indent=1)
    return 1 if any(r["wrong"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
