"""The bench's one timing loop, and the fair preparation every library gets before it.

``mean_seconds`` is the loop itself: a barrier, then back-to-back calls, the mean per call on this rank. Every
library in every bench is timed through it. ``time_loop`` is what the collectives bench wraps around it for each
library alike: the buffers the calls reuse get the same memory (atb_ops.bench.pages), the warm-up calls, and the
iteration count (``--iters``, or as many as fit in ``--budget`` seconds on the slowest rank).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from atb_ops.bench import pages
from atb_ops.bench.config import BenchConfig


def _nothing() -> None:
    """A `sync` for libraries whose calls are done when they return (CPU ones)."""


def mean_seconds(fn: Callable[[], Any], iters: int, barrier: Callable[[], None],
                 sync: Callable[[], None] = _nothing) -> float:
    """Mean seconds per call of `iters` back-to-back calls of fn on this rank, started together on every rank.

    Args:
        fn: the call timed.
        iters: how many calls (every rank must make the same number).
        barrier: the ranks' barrier, so that no rank starts timing while another is still busy.
        sync: waits until work fn queued is done (a GPU's stream); the default waits for nothing.

    Returns:
        Seconds per call (the elapsed time itself when iters is 0).
    """
    barrier()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - start) / max(iters, 1)


def auto_iters(cfg: BenchConfig, est_s: float) -> int:
    """Timed iterations: cfg.iters, or enough for about cfg.budget_s (at least 5, at most 20000)."""
    if cfg.iters > 0:
        return cfg.iters
    return int(min(20000, max(5, cfg.budget_s / max(est_s, 1e-7))))


def time_loop(fn: Callable[[], Any], cfg: BenchConfig, reduce_max: Callable[[float], float],
              barrier: Callable[[], None], sync: Callable[[], None], buffers: Sequence[torch.Tensor] = ()) -> float:
    """Mean seconds per call of fn on this rank, after warm-up; every rank runs the same count.

    Args:
        fn: the call timed.
        cfg: the run (--warmup, --iters, --budget, --pages).
        reduce_max: the maximum of a value over the ranks (the slowest rank's estimate sets the count).
        barrier: the ranks' barrier.
        sync: waits until work fn queued is done.
        buffers: the tensors fn reads and writes every call; they first get the memory cfg.pages names,
            whichever library fn calls.

    Returns:
        Seconds per call on this rank.
    """
    pages.give_same_pages(cfg.pages, buffers)
    for _ in range(cfg.warmup):
        fn()
    sync()
    barrier()
    start = time.perf_counter()
    fn()
    fn()
    sync()
    iters = auto_iters(cfg, reduce_max((time.perf_counter() - start) / 2))
    return mean_seconds(fn, iters, barrier, sync)


def memcpy_seconds(nbytes: int, repeats: int = 5) -> float:
    """Best time of one libc memcpy of nbytes between two warm buffers (one thread): the footer's bound.

    Args:
        nbytes: bytes copied per call.
        repeats: the fewest copies timed together (small sizes take more, up to 8 MiB or 2000 copies).

    Returns:
        Seconds per copy, the best of three runs.
    """
    import ctypes

    src = torch.ones(nbytes, dtype=torch.uint8)
    dst = torch.zeros(nbytes, dtype=torch.uint8)
    copy = functools.partial(ctypes.memmove, dst.data_ptr(), src.data_ptr(), nbytes)
    copy()
    reps = max(repeats, min(2000, (8 << 20) // max(nbytes, 1)))
    return min(mean_seconds(copy, reps, _nothing) for _ in range(3))
