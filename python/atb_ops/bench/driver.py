"""The collectives bench's driver: starts every library's ranks, has them take turns size by size and round by
round, prints the table as rows come in, and returns (and writes) the JSON document."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import torch

from atb_ops.bench import c10d, columns, mpi, ops, pages, plot, ranks, report, rounds, workload
from atb_ops.bench.config import BenchConfig, resolve_bind
from atb_ops.bench.launcher import Progress, Ranks
from atb_ops.emulated_hosts import parse_rate


def config_for(args: argparse.Namespace) -> tuple[BenchConfig, list[str], bool]:
    """The run the parsed flags describe, with what the backend rules out turned off.

    Args:
        args: cli.parse_args's result.

    Returns:
        The configuration, the notes the title carries (what was left out and why), and whether Open MPI's
        column is wanted.
    """
    c10d_api = args.api == "c10d"
    cfg = BenchConfig(
        world_size=args.world_size, op=args.op, api=args.api == "distributed", backend=args.backend,
        sizes=args.size_list, dtype=args.dtype, pattern=args.pattern, spread=args.spread, seed=args.seed,
        iters=args.iters, warmup=args.warmup, budget_s=args.budget, gloo=not args.no_gloo, check=not args.no_check,
        shared=not args.no_shared, pages=args.pages, torchscript=not args.no_torchscript and not c10d_api,
        bind=resolve_bind(args.bind, args.world_size), hosts=args.hosts or 1,
    )
    cpu_backend = args.backend in ("shm", "gloo", "auto") or (args.backend == "hccl" and not hasattr(torch, "npu"))
    notes: list[str] = []
    if not cpu_backend or args.backend == "gloo" or c10d_api:
        cfg.shared = False  # shm_empty buffers are the shm backend's (and a c10d group allocates nothing)
    if args.backend == "nccl":
        notes.append("torch.distributed's column runs on its nccl backend; Open MPI's only for CPU backends")
    elif not cpu_backend:
        cfg.gloo = False
        notes.append("gloo and Open MPI columns run only for CPU backends")
    collective = ops.COLLECTIVES[args.op]
    want_mpi = cpu_backend and not args.no_mpi
    if args.hosts:
        notes.append(f"{args.hosts} emulated hosts x {args.world_size // args.hosts} ranks, host by host; link "
                     f"{args.link_rate or 'unshaped'}")

    if want_mpi and collective.reduces and args.dtype not in mpi.REDUCIBLE:
        notes.append(f"Open MPI skipped: it has no {args.dtype} arithmetic for {collective.mpi_call}")
        want_mpi = False
    return cfg, notes, want_mpi


def _start_mpi(cfg: BenchConfig, timeout_s: float, notes: list[str], hosts: Any = None) -> mpi.MpiJob | None:
    """The Open MPI job, started and idle; None when it cannot run (why is noted)."""
    ok, why = mpi.available()
    if not ok:
        notes.append(f"Open MPI skipped: {why}")
        return None
    try:
        return mpi.MpiJob(cfg.to_json(), cfg.world_size, bind=cfg.bind, timeout_s=min(timeout_s, 600.0), hosts=hosts)
    except (RuntimeError, OSError) as e:
        notes.append(f"Open MPI failed to start, column left empty: {str(e).splitlines()[0]}")
        print(f"# {e}", file=sys.stderr)
        return None


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Runs the benchmark described by parsed arguments, prints the table, returns the JSON document.

    Args:
        args: cli.parse_args's result (an --op of ops.COLLECTIVES).

    Returns:
        {"config", "labels", "host", "notes", "rows", "avg_busbw"}, as written by --json.

    Raises:
        RuntimeError: When an atb_ops rank fails or does not finish in --timeout (Open MPI's failures only
            empty its column).
    """
    if not args.hosts:
        return _run(args, None)
    from atb_ops.emulated_hosts import EmulatedHosts

    with EmulatedHosts(args.hosts, link_rate=args.link_rate, tag="bench") as hosts:
        return _run(args, hosts)


def _run(args: argparse.Namespace, hosts: Any) -> dict[str, Any]:
    """run() with the ranks on `hosts` (an EmulatedHosts) or on this host (None)."""
    c10d_api = args.api == "c10d"
    cfg, notes, want_mpi = config_for(args)
    collective = ops.COLLECTIVES[args.op]
    progress = Progress()
    run_rank = c10d.run_rank if c10d_api else ranks.run_rank
    spawned = Ranks(run_rank, cfg, cfg.world_size, job="bench", timeout_s=args.timeout, progress=progress,
                    env={"OMP_NUM_THREADS": "1", **pages.env_for(cfg.pages)}, hosts=hosts)
    mpi_job = _start_mpi(cfg, args.timeout, notes, hosts) if want_mpi else None
    cols = columns.columns_for(cfg, c10d_api, mpi_job is not None)
    if mpi_job is not None:
        notes.append(f"Open MPI: {mpi_job.library}")
    several = args.rounds > 1
    bus_factor = collective.bus_factor(cfg.world_size)
    rows: list[dict[str, Any]] = []
    try:
        print(report.header([*columns.title_lines(cfg, c10d_api, args.rounds), *notes], cols.labels["atb"],
                            cols.table, several), flush=True)
        for index, size in enumerate(cfg.sizes):
            raw: list[dict[str, Any]] = []
            mpi_raw: list[dict[str, Any] | None] = []
            for round_no in range(args.rounds):
                if mpi_job is not None:
                    progress(f"{workload.format_bytes(size)}: Open MPI {collective.mpi_call} (round {round_no + 1})")
                    try:
                        mpi_raw.append(mpi_job.run(index))
                    except RuntimeError as e:
                        print(f"# Open MPI failed; its column stays empty from here: {e}", file=sys.stderr)
                        mpi_job.close()
                        mpi_job = None
                spawned.run(index, round_no, raw.append)
            row = rounds.make_row(raw, mpi_raw, cfg.dtype, bus_factor, cols.keys)
            if hosts is not None and args.link_rate:
                link = collective.link_bytes(size, hosts.n, cfg.world_size // hosts.n)
                row["link_limit_us"] = link / (parse_rate(args.link_rate) / 8) * 1e6  # the rate is in bits/s
            rows.append(row)
            print(report.row_line(row, cfg.dtype, cols.table, several), flush=True)
    finally:
        spawned.close()
        if mpi_job is not None:
            mpi_job.close()
    return _finish(args, cfg, cols, notes, rows)


def _finish(args: argparse.Namespace, cfg: BenchConfig, cols: columns.Columns, notes: list[str],
            rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Prints the footer, writes --json and --plot, and returns the JSON document."""
    labels = cols.labels
    cores = os.cpu_count() or 1
    moved = {k: v for k, v in labels.items() if k != "floor"}  # the floor moves nothing: no bandwidth
    print(report.footer(rows, moved, cfg.world_size, cores), flush=True)
    if any("link_limit_us" in r for r in rows):
        print(report.link_limits(rows, moved), flush=True)
    if "floor" in labels:
        print(report.above_floor(rows), flush=True)
    doc = {"config": {**json.loads(cfg.to_json()), "rounds": args.rounds}, "labels": labels,
           "host": {"cores": cores, "cpu": columns.cpu_model()}, "notes": notes, "rows": rows}
    doc["avg_busbw"] = {key: report.avg_busbw(rows, key) for key in labels}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    if args.plot:
        plot.plot(args.plot, rows, labels, f"{cfg.op}, {cfg.world_size} ranks, {cfg.dtype}"
                  + (f", {columns.pattern_text(cfg)}" if cfg.op == "alltoallv" else ""), cfg.world_size, cores)
    return doc
