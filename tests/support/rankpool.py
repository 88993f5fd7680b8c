"""A pool of CPU rank processes that stays up for the whole test session.

Spawning a rank costs seconds (importing torch); a parametrized suite of hundreds of cases cannot pay
that per case. Each pool starts `world_size` ranks once (spawn, loopback only, a gloo default group
and a job id of their own), then runs test functions on every rank and returns their results in rank
order. A case that raises on any rank fails with every rank's traceback; a case that hangs fails after
the timeout and the pool is torn down, never leaving a test waiting forever.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from tests.support.environment import environment
from tests.support.launch import free_port


def _worker(rank: int, world_size: int, env: dict[str, str], tasks: mp.Queue, results: mp.Queue) -> None:
    os.environ.update(env)
    import torch.distributed as dist

    import atb_ops  # noqa: F401  (registers OperationTorch in this rank)

    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{env['MASTER_PORT']}", rank=rank, world_size=world_size
    )
    while True:
        item = tasks.get()
        if item is None:
            break
        fn, args = item
        try:
            results.put((rank, True, fn(rank, world_size, *args)))
        except BaseException:  # noqa: BLE001 - every failure travels back to the test
            results.put((rank, False, traceback.format_exc()))
    dist.destroy_process_group()


class RankFailure(AssertionError):
    """A test function raised on one or more ranks; the message holds their tracebacks."""


class RankPool:
    """`world_size` persistent CPU ranks. Use `run` to execute a function on all of them."""

    def __init__(self, world_size: int, timeout_s: float = 120.0, extra_env: dict[str, str] | None = None):
        self.world_size = world_size
        self.timeout_s = timeout_s
        ctx = mp.get_context("spawn")
        env = {
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(free_port()),
            "ATB_OPS_JOB_ID": f"pytest-{uuid.uuid4().hex}",
            "ATB_OPS_TIMEOUT": str(int(timeout_s)),
            **(extra_env or {}),
        }
        self.env = env
        self._results: mp.Queue = ctx.Queue()
        self._tasks = [ctx.Queue() for _ in range(world_size)]
        self._procs = [
            ctx.Process(target=_worker, args=(r, world_size, env, self._tasks[r], self._results), daemon=True)
            for r in range(world_size)
        ]
        # Started with the job's variables in their environment from the first instruction (spawn copies
        # os.environ), so other processes see them as ranks of a job of their own (/proc/<pid>/environ).
        with environment(env):
            for p in self._procs:
                p.start()

    def run(self, fn: Callable[..., Any], *args: Any, per_rank: Sequence[tuple] | None = None) -> list[Any]:
        """Run fn(rank, world_size, *args, *per_rank[rank]) on every rank; results in rank order.

        Raises:
            RankFailure: When fn raised on any rank (all tracebacks in the message).
            TimeoutError: When a rank did not answer within the pool's timeout (the pool is closed).
        """
        for r in range(self.world_size):
            extra = tuple(per_rank[r]) if per_rank is not None else ()
            self._tasks[r].put((fn, args + extra))
        got: dict[int, tuple[bool, Any]] = {}
        deadline = time.monotonic() + self.timeout_s
        while len(got) < self.world_size:
            try:
                rank, ok, value = self._results.get(timeout=0.2)
            except queue.Empty:
                # A worker that died (a crash, an abort) never answers: say so at once, with its exit status.
                dead = {r: p.exitcode for r, p in enumerate(self._procs) if r not in got and not p.is_alive()}
                if dead or time.monotonic() > deadline:
                    missing = sorted(set(range(self.world_size)) - set(got))
                    self.close(force=True)
                    if dead:
                        raise RankFailure(f"{fn.__name__}: rank process(es) exited without answering, exit "
                                          f"status by rank: {dead}") from None
                    raise TimeoutError(f"ranks {missing} did not finish {fn.__name__} in {self.timeout_s} s") from None
                continue
            got[rank] = (ok, value)
        failures = [f"--- rank {r} ---\n{v}" for r, (ok, v) in sorted(got.items()) if not ok]
        if failures:
            raise RankFailure(f"{fn.__name__} failed:\n" + "\n".join(failures))
        return [got[r][1] for r in range(self.world_size)]

    @property
    def alive(self) -> bool:
        return all(p.is_alive() for p in self._procs)

    def close(self, force: bool = False) -> None:
        """Stop the ranks (politely unless force).

        Raises:
            RankFailure: When a polite stop found a worker that did not exit with status 0 (a crash or abort at
                interpreter exit is a failure too).
        """
        if not force:
            for q in self._tasks:
                q.put(None)
            for p in self._procs:
                p.join(timeout=10)
        for p in self._procs:
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        if not force:
            bad = {r: p.exitcode for r, p in enumerate(self._procs) if p.exitcode != 0}
            if bad:
                raise RankFailure(f"rank pool workers exited with non-zero status, by rank: {bad}")
