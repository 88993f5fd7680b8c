"""What every bench rank does around the calls it times: join the ranks' gloo group, time a library through the
one timing loop, and report a row.

The gloo default group carries the figures between ranks in every bench (the slowest rank's time, the sum of
wrong elements); the libraries compared get groups or communicators of their own.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from atb_ops.bench import timing
from atb_ops.bench.config import BenchConfig


def join(rank: int, world_size: int, threads: int, pin: bool = False) -> None:
    """Sets this rank up and joins the ranks' gloo default group (MASTER_PORT from the launcher).

    Args:
        rank: this rank.
        world_size: all ranks.
        threads: torch's intra-op threads here (1 where ranks share the cores: more would only fight them).
        pin: run on allowed CPU rank % count, as mpirun --bind-to core.
    """
    import torch.distributed as dist

    torch.set_num_threads(threads)
    if pin:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    address = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    dist.init_process_group("gloo", init_method=address, rank=rank, world_size=world_size)


def serve_sizes(rank: int, results: Any, commands: Any, run_size: Callable[[int, int], None]) -> None:
    """The rank's half of the launcher's protocol, once it has joined: "ready", then each (size index, round) it is
    sent run by run_size and answered with "ran"; after None it leaves the group and answers "done".

    Args:
        rank: this rank.
        results: the launcher's results queue.
        commands: this rank's commands queue.
        run_size: runs one size (index, round); rank 0 puts its rows on `results`.
    """
    import torch.distributed as dist

    results.put(("ready", rank))
    while (command := commands.get()) is not None:
        index, round_no = command
        run_size(index, round_no)
        results.put(("ran", rank))
    dist.barrier()  # nobody leaves while a peer may still be reducing with it
    dist.destroy_process_group()
    results.put(("done", rank))


def over_ranks(values: list[float], op: Any) -> list[float]:
    """`values` reduced element-wise over the ranks with `op` (a torch.distributed.ReduceOp), in float64."""
    import torch.distributed as dist

    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t, op=op)
    return t.tolist()


def max_over_ranks(value: float) -> float:
    """The largest of `value` over the ranks (a time: the slowest rank's)."""
    import torch.distributed as dist

    return over_ranks([value], dist.ReduceOp.MAX)[0]


def _nothing() -> None:
    """The sync of a CPU library: its calls are done when they return."""


@dataclass
class BenchRank:
    """One rank of the collectives bench (execute_out or --api c10d): what its per-size code needs."""

    rank: int
    cfg: BenchConfig
    results: Any
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    sync: Callable[[], None] = _nothing
    # torch.distributed's own call is timed on this group: None is the default (gloo) group, for CPU tensors;
    # CUDA tensors get an nccl group (see ranks.run_rank).
    torch_group: Any = None
    torch_backend: str = "gloo"

    def progress(self, what: str) -> None:
        """A progress line (rank 0 speaks for all)."""
        if self.rank == 0:
            self.results.put(("progress", what))

    def time(self, call: Callable[[], Any], buffers: Sequence[torch.Tensor] = ()) -> float:
        """Seconds per call of `call` on this rank, through the fair loop (timing.time_loop).

        Args:
            call: the library's call.
            buffers: the tensors it reuses every call (they get the run's memory first).

        Returns:
            Seconds per call on this rank.
        """
        import torch.distributed as dist

        return timing.time_loop(call, self.cfg, max_over_ranks, dist.barrier, self.sync, buffers)

    def report(self, index: int, round_no: int, size: int, nbytes: int, count: int,
               timed: dict[str, tuple[float, float]]) -> None:
        """Reduces each column's (seconds, #wrong) over the ranks (max, sum); rank 0 sends the row.

        Args:
            index: the size's index.
            round_no: the round.
            size: the size asked for (bytes).
            nbytes: the bytes the row reports (nccl-tests' size).
            count: the elements the row reports.
            timed: column key -> (seconds per call on this rank, NaN where not run; wrong elements here).
        """
        import torch.distributed as dist

        keys = sorted(timed)
        # The footer's memcpy bound is a CPU core's: it says nothing of a GPU's buffers.
        cpu = self.device.type == "cpu"
        memcpy_s = timing.memcpy_seconds(nbytes) if self.rank == 0 and nbytes > 0 and cpu else float("nan")
        times = over_ranks([timed[k][0] for k in keys], dist.ReduceOp.MAX)
        wrongs = over_ranks([float(timed[k][1]) for k in keys], dist.ReduceOp.SUM)
        if self.rank == 0:
            row: dict[str, Any] = {"index": index, "round": round_no, "size": size, "bytes": nbytes, "count": count,
                                   "memcpy_s": memcpy_s}
            for k, t, w in zip(keys, times, wrongs, strict=True):
                row[k] = None if t != t else {"time_s": t, "wrong": int(w)}
            self.results.put(("row", row))
