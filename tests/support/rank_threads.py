"""Ranks as threads of one process (commMode 1, the vendor mocks' in-process worlds): native calls release the GIL."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def run_threads(n: int, fn: Callable[[int], Any], timeout_s: float = 60) -> list[Any]:
    """Runs fn(rank) on n threads at once.

    Args:
        n: how many ranks.
        fn: one rank's work.
        timeout_s: how long to wait for each rank's result.

    Returns:
        Every rank's result, in rank order.

    Raises:
        Exception: the first failure among the ranks, re-raised here.
    """
    with ThreadPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(fn, r) for r in range(n)]
        return [f.result(timeout=timeout_s) for f in futures]
