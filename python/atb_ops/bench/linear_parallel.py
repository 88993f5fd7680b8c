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
from typing import Any

from atb_ops.bench import launcher, linear_parallel_ranks, table, workload

DTYPES = ("float16", "bfloat16")
DEFAULT_SIZES = "64K:16M"


def blocks(names: list[str], world: int, dtype: str) -> list[table.Block]:
    """The table (atb_ops.bench.table): size m k n type, then time, TFLOP/s and busbw per variant, then the fused
    call's speedup and #wrong.

    Args:
        names: the variants timed (fused, unfused, unfused_gloo).
        world: the ranks (busbw's 2(n-1)/n).
        dtype: the element type's name.

    Returns:
        The blocks.
    """
    bus = 2 * (world - 1) / world

    def flops(r: dict[str, Any]) -> float:
        return 2.0 * r["m"] * r["k"] * r["n"]

    out = [table.Block((table.Field("size", 9, lambda r: workload.format_bytes(r["size"])),
                        table.Field("m", 6, lambda r: f"{r['m']}"), table.Field("k", 5, lambda r: f"{r['k']}"),
                        table.Field("n", 5, lambda r: f"{r['n']}"), table.Field("type", 8, lambda r: dtype)))]
    for name in names:
        out.append(table.Block((
            table.Field(name + " us", 17, lambda r, name=name: f"{r['times_s'][name] * 1e6:.1f}"),
            table.Field("TFLOP/s", 7, lambda r, name=name: f"{flops(r) / r['times_s'][name] / 1e12:.3f}"),
            table.Field("busbw", 6, lambda r, name=name: f"{r['size'] / r['times_s'][name] / 1e9 * bus:.2f}"),
        ), gap=" | "))
    out.append(table.Block((
        table.Field("speedup", 7, lambda r: f"{r['times_s']['unfused'] / r['times_s']['fused']:.2f}"),
        table.Field("#wrong", 6, lambda r: f"{r['wrong']}"),
    ), gap=" | "))
    return out


def format_table(rows: list[dict[str, Any]], world: int, dtype: str, backend: str) -> str:
    """The nccl-tests-style table of rank 0's rows.

    Args:
        rows: one per size (size, m, k, n, iters, times_s per variant, wrong).
        world: the ranks.
        dtype: the element type's name.
        backend: the atb_ops backend both operations ran on.

    Returns:
        The table's text.
    """
    title = [
        f"linear_parallel: LinearParallelOperation LINEAR_ALL_REDUCE vs matmul + all-reduce, {world} CPU ranks, "
        f"backend {backend}, {dtype}",
        "time: mean per call, max over ranks, best round; TFLOP/s = 2mkn/time; busbw (GB/s) = size/time * "
        "2(n-1)/n; speedup = unfused time / fused time",
    ]
    return table.render(title, blocks(list(rows[0]["times_s"]) if rows else [], world, dtype), rows)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m atb_ops bench --op linear_parallel [options]``.

    Args:
        argv: the arguments after ``bench`` (None: the command line's).

    Returns:
        1 when the fused output had wrong elements at any size, else 0.

    Raises:
        SystemExit: With argparse's usage message and status 2 for a value it cannot run.
        RuntimeError: When a rank failed or did not finish in --timeout.
    """
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
    from atb_ops.bench.cli import check_output_files, check_repeats

    check_repeats(parser, args.iters, args.warmup, args.rounds)
    check_output_files(parser, json=args.json)
    if args.budget <= 0 or args.timeout <= 0:
        parser.error("--budget and --timeout must be > 0")
    try:
        sizes = workload.parse_sizes(args.sizes)
    except ValueError as e:
        parser.error(str(e))
    env = {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // args.world_size))}
    config = {"sizes": sizes, "k": args.k, "n": args.n, "dtype": args.dtype, "backend": args.backend,
              "iters": args.iters, "budget": args.budget, "warmup": args.warmup, "rounds": args.rounds,
              "gloo": not args.no_gloo, "world_size": args.world_size}
    rows = launcher.rows_of(linear_parallel_ranks.run_rank, config, args.world_size, len(sizes), job="bench-lp",
                            env=env, timeout_s=args.timeout)
    print(format_table(rows, args.world_size, args.dtype, args.backend), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"config": config, "rows": rows}, f, indent=1)
    return 1 if any(r["wrong"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
