"""`python -m atb_ops bench --op quant_allreduce`: the int8 all-reduce against torch.distributed.all_reduce.

For each size, every rank holds a seeded Gaussian tensor of `count = size / element_size(--dtype)` elements
and the same tensor goes through:

- ``all_reduce fp32`` / ``all_reduce fp16``: torch.distributed.all_reduce on the gloo group (the tensor
  cast to float32 / float16), timed in place with no copy (the strictest baseline);
- ``atb_ops AllReduce fp32``: ATB's ``AllReduceOperation`` (--backend, default ``auto``: shared memory in a host,
  two levels across hosts), ``execute_out`` into a reused output: atb_ops' own float32 all-reduce;
- ``quant int8, gather <out>``: atb_ops.quant.quantized_all_reduce (int8 all-to-all + scales, float32
  reduce, all-gather in --out-dtype) on the node-local path (ATB_OPS_CPU_PATH, default auto: shm);
- ``quant int8, gather int8``: the same with quantize_allgather=True.

Columns, nccl-tests' first (``python -m atb_ops bench``'s table form): ``size`` (bytes of each rank's input),
``count``, ``type`` (the input's dtype), then per variant ``time`` (us, the mean wall time per call, the slowest
rank's), ``algbw`` (size / time, GB/s), ``busbw`` (algbw * 2(n-1)/n, an all-reduce's), ``#wrong`` (elements past
the variant's error bound, bench.quant_bounds: 0 unless the data is wrong), then ``bytes`` each rank sends per call
(the busiest rank; for all_reduce the bandwidth-optimal 2 (n-1)/n * count * element_size that gloo's ring sends),
``xfp16`` that over the fp16 all_reduce's bytes, ``xfp32`` the fp32 all_reduce's time over this row's (> 1: faster
than fp32), ``xatb32`` the same against atb_ops' fp32 AllReduce, ``rel_err`` the relative L2 error against the
exact float64 sum. With --no-gloo the gloo rows and their ratios are left out. Open MPI has no int8 all-reduce:
this bench has no MPI column (--no-mpi is accepted, as the other benches take it).

The ranks are CPU processes on this host (spawned, loopback only), or with ``--hosts H`` on H emulated hosts
(network namespaces on a bridge, made for the run and removed after it; root only), host by host, the link
shaped with ``--link-rate`` (e.g. 10gbit); the title then gives each size's link limit for float32. Timings
on a shared machine are noisy:
each variant runs --rounds rounds of --iters calls, interleaved with the other variants, and the table shows
the best round (the least disturbed by other processes) and the median one.
"""
from __future__ import annotations

import argparse
import json
import os
from typing import Any

from atb_ops.bench import launcher, quant_ranks, table, workload

DTYPES = ("float16", "bfloat16", "float32")
DEFAULT_SIZES = ("1M", "16M", "64M")


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
    hosts: int = 0,
    link_rate: str | None = None,
    backend: str = "auto",
    gloo: bool = True,
) -> list[dict[str, Any]]:
    """Spawn the ranks, run every variant at every size, return rank 0's rows with ratios added.

    Args:
        world_size: CPU ranks on this host.
        sizes: bytes of each rank's input (default DEFAULT_SIZES).
        dtype: the input's dtype.
        out_dtype: what the quantised variant gathers in (besides int8).
        block_size: elements per quantisation scale.
        warmup: untimed calls per variant and size.
        iters: timed calls per round.
        rounds: rounds over all variants.
        path: ATB_OPS_CPU_PATH of the ranks (auto, shm or group).
        thp: whether torch's CPU allocator asks for transparent huge pages (THP_MEM_ALLOC_ENABLE=1).
        timeout_s: how long any one step (start, a size) may take.
        hosts: run the ranks on this many emulated hosts (0: on this host); it must divide world_size.
        link_rate: with hosts, every host's link shaped to this rate (tc's spelling, e.g. "10gbit").
        backend: the backend of the atb_ops fp32 AllReduceOperation row.
        gloo: whether torch.distributed's all_reduce rows (gloo, fp32 and fp16) run.

    Returns:
        One row per size and variant: size, count, type, variant, bytes, time_s (best round), time_median_s,
        times_s, algbw, busbw (GB/s), wrong, rel_err, bytes_vs_fp16 and speedup_vs_fp32 (None without gloo),
        speedup_vs_atb_fp32.

    Raises:
        RuntimeError: When a rank failed or did not finish within timeout_s.
    """
    sizes = workload.parse_sizes(",".join(DEFAULT_SIZES)) if sizes is None else sizes
    env = {"ATB_OPS_CPU_PATH": path}
    if thp:
        env["THP_MEM_ALLOC_ENABLE"] = "1"  # torch's CPU allocator asks for transparent huge pages
    config = {"world_size": world_size, "sizes": sizes, "dtype": dtype, "out_dtype": out_dtype,
              "block_size": block_size, "warmup": warmup, "iters": iters, "rounds": rounds, "backend": backend,
              "gloo": gloo}
    if hosts:
        from atb_ops.emulated_hosts import EmulatedHosts

        with EmulatedHosts(hosts, link_rate=link_rate, tag="bench") as emulated:
            rows = launcher.rows_of(quant_ranks.run_rank, config, world_size, len(sizes), job="bench-quant",
                                    env=env, timeout_s=timeout_s, hosts=emulated)
    else:
        rows = launcher.rows_of(quant_ranks.run_rank, config, world_size, len(sizes), job="bench-quant", env=env,
                                timeout_s=timeout_s)
    bus = 2 * (world_size - 1) / world_size
    for size in sizes:
        same = [r for r in rows if r["size"] == size]
        fp16 = next((r for r in same if r["variant"].startswith("all_reduce fp16")), None)
        fp32 = next((r for r in same if r["variant"].startswith("all_reduce fp32")), None)
        atb32 = next(r for r in same if r["variant"].startswith("atb_ops AllReduce fp32"))
        for r in same:
            r["algbw"] = size / r["time_s"] / 1e9 if r["time_s"] > 0 else 0.0
            r["busbw"] = r["algbw"] * bus
            r["bytes_vs_fp16"] = r["bytes"] / fp16["bytes"] if fp16 and fp16["bytes"] else None  # 1 rank moves none
            r["speedup_vs_fp32"] = fp32["time_s"] / r["time_s"] if fp32 else None
            r["speedup_vs_atb_fp32"] = atb32["time_s"] / r["time_s"]
    return rows


def _ratio(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


# The table: one row per size and variant (atb_ops.bench.table).
BLOCKS = [
    table.Block((table.Field("size", 10, lambda r: f"{r['size']}"),
                 table.Field("count", 10, lambda r: f"{r['count']}"),
                 table.Field("type", 9, lambda r: r["type"]))),
    table.Block((
        table.Field("variant", 28, lambda r: r["variant"], align="<"),
        table.Field("time(us)", 9, lambda r: f"{r['time_s'] * 1e6:.1f}"),
        table.Field("(median)", 10, lambda r: f"({r['time_median_s'] * 1e6:.1f})"),
        table.Field("algbw", 8, lambda r: f"{r['algbw']:.2f}"),
        table.Field("busbw", 8, lambda r: f"{r['busbw']:.2f}"),
        table.Field("#wrong", 6, lambda r: f"{r['wrong']:d}"),
        table.Field("bytes", 11, lambda r: f"{r['bytes']}"),
        table.Field("xfp16", 6, lambda r: _ratio(r["bytes_vs_fp16"], 3)),
        table.Field("xfp32", 6, lambda r: _ratio(r["speedup_vs_fp32"], 2)),
        table.Field("xatb32", 6, lambda r: _ratio(r["speedup_vs_atb_fp32"], 2)),
        table.Field("rel_err", 9, lambda r: f"{r['rel_err']:.2e}"),
    ), gap="  "),
]


def format_table(
    rows: list[dict[str, Any]],
    world_size: int,
    dtype: str,
    out_dtype: str,
    block_size: int,
    path: str = "auto",
    thp: bool = False,
    hosts: int = 0,
    link_rate: str | None = None,
) -> str:
    """The table of run()'s rows, under a title that says what was run and what each column means.

    Args:
        rows: run()'s rows.
        world_size: the ranks.
        dtype: the input's dtype.
        out_dtype: the quantised variant's gather dtype.
        block_size: elements per scale.
        path: ATB_OPS_CPU_PATH of the run.
        thp: whether torch's allocator used huge pages.
        hosts: the emulated hosts the ranks ran on (0: this host).
        link_rate: their links' rate, if shaped.

    Returns:
        The table's text.
    """
    title = [
        f"quant_allreduce: {world_size} CPU ranks, input {dtype}, block_size {block_size}, out_dtype {out_dtype}, "
        f"quant path {path}{', THP' if thp else ''}",
        "time: best round (median in brackets), us; algbw: size / time, busbw: algbw * 2(n-1)/n (GB/s);",
        "#wrong: elements past the variant's error bound (docs/quant.md); bytes: sent per rank per call (busiest "
        "rank);",
        "xfp16: bytes / fp16 all_reduce bytes; xfp32: gloo's fp32 all_reduce time / this time (> 1 is faster);",
        "xatb32: atb_ops' own fp32 AllReduceOperation time / this time;",
        "rel_err: L2 error against the exact float64 sum; no Open MPI column (MPI has no int8 all-reduce)",
    ]
    if hosts:
        title.insert(1, f"{hosts} emulated hosts x {world_size // hosts} ranks, host by host; link "
                        f"{link_rate or 'unshaped'}")
        if link_rate:
            from atb_ops.bench import ops
            from atb_ops.emulated_hosts import parse_rate

            limits = []
            for size in sorted({r["size"] for r in rows}):
                count = next(r["count"] for r in rows if r["size"] == size)
                link = ops.COLLECTIVES["allreduce"].link_bytes(count * 4, hosts, world_size // hosts)
                limits.append(f"{workload.format_bytes(size)} {link / (parse_rate(link_rate) / 8) * 1e3:.1f} ms")
            title.append("link limit of a float32 all-reduce (what crosses the busiest link / its rate): "
                         + ", ".join(limits))
    wrong = sum(r["wrong"] for r in rows)
    footer = "# Out of bounds values : " + ("0 OK" if wrong == 0 else f"{wrong} WRONG ELEMENTS FOUND (see #wrong)")
    return table.render(title, BLOCKS, rows) + "\n" + footer


def plot(path: str, rows: list[dict[str, Any]], title: str, world_size: int) -> None:
    """algbw against size, one line per variant (bench.plot's figure).

    Args:
        path: the PNG to write.
        rows: run()'s rows.
        title: the figure's title.
        world_size: the ranks.
    """
    from atb_ops.bench import plot as figure

    variants = list(dict.fromkeys(r["variant"] for r in rows))
    by_size = [{"bytes": size, "figures": {r["variant"]: {"algbw": r["algbw"]} for r in rows if r["size"] == size}}
               for size in sorted({r["size"] for r in rows})]
    figure.plot(path, by_size, {v: v for v in variants}, title, world_size, os.cpu_count() or 1)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m atb_ops bench --op quant_allreduce [options]`` or this module's main.

    Args:
        argv: the arguments after ``bench`` (None: the command line's).

    Returns:
        0 (the table is printed; --json also writes the rows).

    Raises:
        SystemExit: With argparse's usage message and status 2 for a value it cannot run.
        RuntimeError: When a rank failed or did not finish in time.
    """
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
    parser.add_argument("--hosts", type=int, default=0, metavar="H",
                        help="run the ranks on H emulated hosts (root only; H divides --world-size)")
    parser.add_argument("--link-rate", metavar="RATE", help="with --hosts: shape every host's link, e.g. 10gbit")
    parser.add_argument("--backend", "-b", default="auto", choices=["shm", "gloo", "hccl", "auto"],
                        help="backend of the atb_ops fp32 AllReduceOperation row (default auto)")
    parser.add_argument("--no-gloo", action="store_true", help="leave out torch.distributed's all_reduce rows")
    parser.add_argument("--no-mpi", action="store_true",
                        help="accepted as the other benches take it: this bench has no Open MPI column")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--plot", metavar="F.png", help="also plot algbw against size per variant (matplotlib)")
    args = parser.parse_args(argv)
    if args.world_size < 1:
        parser.error(f"--world-size must be >= 1, got {args.world_size}")
    from atb_ops.bench.cli import check_output_files, check_repeats, check_sizes

    if args.block_size < 1:
        parser.error(f"--block-size must be >= 1, got {args.block_size}")
    check_repeats(parser, args.iters, args.warmup, args.rounds, least_iters=1)
    check_output_files(parser, json=args.json, plot=args.plot)
    _check_hosts(parser, args)
    try:
        sizes = workload.parse_sizes(",".join(args.sizes))
    except ValueError as e:
        parser.error(str(e))
    check_sizes(parser, sizes, args.dtype, args.world_size)
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
        hosts=args.hosts,
        link_rate=args.link_rate,
        backend=args.backend,
        gloo=not args.no_gloo,
    )
    print(format_table(rows, args.world_size, args.dtype, args.out_dtype, args.block_size, args.path, args.thp,
                       args.hosts, args.link_rate))
    if args.plot:
        plot(args.plot, rows, f"quant_allreduce, {args.world_size} CPU ranks, input {args.dtype}", args.world_size)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "world_size": args.world_size,
                    "dtype": args.dtype,
                    "out_dtype": args.out_dtype,
                    "block_size": args.block_size,
                    "hosts": args.hosts,
                    "link_rate": args.link_rate,
                    "backend": args.backend,
                    "rows": rows,
                },
                f,
                indent=2,
            )
    return 0


def _check_hosts(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--hosts and --link-rate, before anything starts (the collectives bench's checks, and a path that spans
    hosts)."""
    from atb_ops.bench.cli import check_hosts

    if args.hosts and args.path == "shm":
        parser.error("--path shm keeps every rank on one host; use auto or group with --hosts")
    check_hosts(parser, args.hosts, args.world_size, args.link_rate)


if __name__ == "__main__":
    raise SystemExit(main())
