"""Soak: many AllToAllVV2 executes of varying sizes on 2 CPU ranks; RSS and open file descriptors of
every rank at the start (after a warm-up) and at the end.

    python scripts/soak.py --iters 10000 --backend shm

Prints one JSON line per rank and exits non-zero when a rank's RSS grew by more than --rss-tolerance-mib
or its descriptor count changed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import socket
import sys
import time
import uuid

WARMUP = 200


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _rank(rank: int, world_size: int, backend: str, iters: int, max_per_peer: int, env: dict, out: mp.Queue) -> None:
    os.environ.update(env)
    import torch
    import torch.distributed as dist

    import atb_ops  # noqa: F401

    if backend == "gloo":
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{env['MASTER_PORT']}", rank=rank, world_size=world_size
        )
    op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend, "commDomain": "soak"}))
    start = None
    t0 = time.time()
    wrong = 0
    for i in range(iters + WARMUP):
        if i == WARMUP:
            start = (rss_mib(), open_fds())
            t0 = time.time()
        per_peer = (i * 7919) % max_per_peer  # the same on every rank, varying call to call
        x = torch.full((per_peer * world_size,), float(rank), dtype=torch.float32)
        counts = torch.full((world_size,), per_peer, dtype=torch.int64)
        displs = torch.arange(world_size, dtype=torch.int64) * per_peer
        (y,) = op.execute([x, counts, displs, counts, displs, torch.empty(per_peer * world_size, dtype=torch.int8)])
        if i % 97 == 0:
            expected = torch.arange(world_size, dtype=torch.float32).repeat_interleave(per_peer)
            wrong += int((y.view(-1) != expected).sum())
    out.put(
        {
            "rank": rank,
            "backend": backend,
            "iters": iters,
            "seconds": round(time.time() - t0, 2),
            "rss_start_mib": round(start[0], 1),
            "rss_end_mib": round(rss_mib(), 1),
            "fds_start": start[1],
            "fds_end": open_fds(),
            "wrong": wrong,
        }
    )


def run(iters: int, backend: str, world_size: int = 2, max_per_peer: int = 65536) -> list[dict]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"MASTER_PORT": str(port), "ATB_OPS_JOB_ID": f"soak-{uuid.uuid4().hex}", "ATB_OPS_TIMEOUT": "60"}
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()
    procs = [
        ctx.Process(target=_rank, args=(r, world_size, backend, iters, max_per_peer, env, out))
        for r in range(world_size)
    ]
    for p in procs:
        p.start()
    results = sorted((out.get(timeout=3600) for _ in procs), key=lambda r: r["rank"])
    for p in procs:
        p.join(timeout=30)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iters", type=int, default=10000)
    parser.add_argument("--backend", default="shm", choices=["shm", "gloo"])
    parser.add_argument("--max-per-peer", type=int, default=65536, help="elements (float32) per peer, at most")
    parser.add_argument("--rss-tolerance-mib", type=float, default=16.0)
    args = parser.parse_args(argv)
    ok = True
    for r in run(args.iters, args.backend, max_per_peer=args.max_per_peer):
        print(json.dumps(r))
        ok &= r["rss_end_mib"] - r["rss_start_mib"] <= args.rss_tolerance_mib
        ok &= r["fds_end"] == r["fds_start"] and r["wrong"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
