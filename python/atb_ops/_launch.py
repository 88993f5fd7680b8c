"""Spawning CPU ranks for the command-line tools (demo, benchmarks)."""

from __future__ import annotations

import multiprocessing as mp
import queue
import socket
from collections.abc import Callable
from typing import Any


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(target: Callable[..., None], world_size: int, args: tuple, timeout_s: float) -> dict[int, Any]:
    """Spawn target(rank, world_size, *args, results) for every rank and collect what they report.

    Each rank puts (rank, error, value) on `results`: error is "" or a description of its failure.

    Returns:
        {rank: value} for every rank.

    Raises:
        RuntimeError: When a rank reported an error or the ranks did not all report within timeout_s.
    """
    ctx = mp.get_context("spawn")
    results: mp.Queue = ctx.Queue()
    procs = [ctx.Process(target=target, args=(r, world_size, *args, results)) for r in range(world_size)]
    for p in procs:
        p.start()
    got: dict[int, Any] = {}
    try:
        for _ in range(world_size):
            try:
                rank, error, value = results.get(timeout=timeout_s)
            except queue.Empty:
                missing = sorted(set(range(world_size)) - set(got))
                raise RuntimeError(f"ranks {missing} did not finish within {timeout_s} s") from None
            if error:
                raise RuntimeError(f"rank {rank} failed: {error}")
            got[rank] = value
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    return got
