"""`python -m atb_ops demo`: seed 004's AllToAllVV2 example on CPU ranks, each rank's input and output.

With --world-size 2 it is the ATB document's example verbatim; other sizes use a pattern where rank r
sends (r + j) % 3 + 1 elements to rank j, so every rank sends and receives different amounts.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import uuid

from atb_ops._launch import free_port, run_ranks


def seed_layout(rank: int) -> tuple[list[list[int]], list[int], list[int], list[int], list[int]]:
    """Seed 004's inputs and counts for rank 0 or 1."""
    x = [[[0, 1, 2, 3], [4, 5, 6, 7]], [[0, 1, 2], [3, 4, 6]]][rank]
    send_counts = [[2, 4], [2, 1]][rank]
    sdispls = [[0, 2], [0, 2]][rank]
    recv_counts = [[2, 2], [4, 1]][rank]
    rdispls = [[0, 2], [0, 4]][rank]
    return x, send_counts, sdispls, recv_counts, rdispls


def pattern_layout(rank: int, world_size: int) -> tuple[list[list[int]], list[int], list[int], list[int], list[int]]:
    """Rank r sends (r + j) % 3 + 1 elements to rank j, packed in rank order; x holds 100*r + i."""

    def count(src: int, dst: int) -> int:
        return (src + dst) % 3 + 1

    send_counts = [count(rank, j) for j in range(world_size)]
    recv_counts = [count(j, rank) for j in range(world_size)]
    sdispls = [sum(send_counts[:j]) for j in range(world_size)]
    rdispls = [sum(recv_counts[:j]) for j in range(world_size)]
    x = [[100 * rank + i for i in range(sum(send_counts))]]
    return x, send_counts, sdispls, recv_counts, rdispls


def _rank_main(rank: int, world_size: int, backend: str, env: dict[str, str], results: mp.Queue) -> None:
    os.environ.update(env)
    import torch

    import atb_ops  # noqa: F401  (registers torch.classes.OperationTorch)

    try:
        x_list, sc, sd, rc, rd = seed_layout(rank) if world_size == 2 else pattern_layout(rank, world_size)
        x = torch.tensor(x_list, dtype=torch.int64)
        op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
        op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "rankRoot": 0, "backend": backend}))
        op.set_varaintpack_param(json.dumps({"sendCounts": sc, "sdispls": sd, "recvCounts": rc, "rdispls": rd}))
        counts = [torch.tensor(v, dtype=torch.int64) for v in (sc, sd, rc, rd)]
        infer_shape = torch.zeros(sum(rc), dtype=torch.int8)
        (out,) = op.execute([x, *counts, infer_shape])
        results.put((rank, None, (x.tolist(), sc, sd, rc, rd, out.tolist(), list(out.shape))))
    except Exception as e:  # noqa: BLE001 - reported by the parent, with the rank
        results.put((rank, f"{type(e).__name__}: {e}", None))


def run(world_size: int = 2, backend: str = "shm", timeout_s: float = 120.0) -> list[list[list[int]]]:
    """Spawn the ranks, print each one's input and output in rank order, return the outputs.

    Raises:
        RuntimeError: When a rank failed or did not finish within timeout_s.
    """
    if world_size < 1:
        raise ValueError(f"--world-size must be >= 1, got {world_size}")
    env = {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "ATB_OPS_JOB_ID": f"demo-{uuid.uuid4().hex}",
        "ATB_OPS_TIMEOUT": str(int(timeout_s)),
    }
    got = run_ranks(_rank_main, world_size, (backend, env), timeout_s)
    print(f"AllToAllVV2Operation demo: {world_size} CPU rank(s), backend '{backend}'")
    outputs = []
    for rank in range(world_size):
        x, sc, sd, rc, rd, out, shape = got[rank]
        print(f"rank {rank} input  {x}  sendCounts={sc} sdispls={sd} recvCounts={rc} rdispls={rd}")
        print(f"rank {rank} output {out}  shape {shape}")
        outputs.append(out)
    return outputs


MAX_WORLD_SIZE = 64


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m atb_ops demo", description=__doc__)
    parser.add_argument("--world-size", type=int, default=2, help="number of CPU ranks (default 2: the seed)")
    parser.add_argument(
        "--backend",
        default="shm",
        choices=["shm", "gloo", "hccl", "auto"],
        help="backend name in the param (hccl/auto run on shm for CPU tensors)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.world_size <= MAX_WORLD_SIZE:
        parser.error(f"--world-size must be between 1 and {MAX_WORLD_SIZE} (every rank is a Python process with torch "
                     f"on this machine), got {args.world_size}")
    run(args.world_size, args.backend)
    return 0
