"""``python -m atb_ops bench --api c10d``: torch.distributed's own calls on the backend "atb_ops" beside gloo.

The ranks start with a gloo default group (it carries the figures between ranks, as in every bench run) and make
one more group with ``backend="atb_ops"``. Per size each rank runs the same torch.distributed call
(``all_to_all_single`` for ``--op alltoallv``, ``all_reduce``, ``reduce_scatter_tensor``,
``all_gather_into_tensor``, ``broadcast``) on the atb_ops group and then on the gloo group, with the same reused
tensors: checked once (output pre-filled with a sentinel: ``#wrong``), warmed up and timed like every other
column (``atb_ops.bench.ranks.time_loop``). Open MPI's column is the usual mpirun job.

The **floor** column is the same call on a group of torch's own backend that moves nothing and completes at once
(``FakeProcessGroup``, backend "fake" of ``torch.testing._internal.distributed.fake_pg``): what torch.distributed
itself costs per call (argument checks, dispatch, work objects). atb_ops' time above it is what the backend adds.
It is not checked (it writes nothing by design).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import torch

from atb_ops.bench import collectives, workload
from atb_ops.bench.ranks import BenchConfig, _report, plan_for, row_bytes, serve_rank, time_loop

# --op -> the torch.distributed call timed on both groups.
CALLS = {"alltoallv": "all_to_all_single", "allreduce": "all_reduce", "reduce_scatter": "reduce_scatter_tensor",
         "allgather": "all_gather_into_tensor", "broadcast": "broadcast"}


def rank_main(rank: int, cfg_json: str, env: dict[str, str], results: Any, commands: Any) -> None:
    """Entry point of one spawned rank (the protocol of ``atb_ops.bench.ranks.rank_main``).

    Args:
        rank: this rank.
        cfg_json: the BenchConfig as JSON.
        env: variables to set first (job scope, master address).
        results: where ("ready"|"row"|"progress"|"ran"|"done"|"error", value) messages go.
        commands: (size index, round) pairs to run, None to stop.
    """
    serve_rank(rank, cfg_json, env, results, commands, _run_rank)


def _run_rank(rank: int, cfg: BenchConfig, results: Any, commands: Any) -> None:
    import torch.distributed as dist

    import atb_ops  # noqa: F401  (registers the backend "atb_ops")

    torch.set_num_threads(1)
    if cfg.bind == "core":
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}", rank=rank,
                            world_size=cfg.world_size)
    ours = dist.new_group(list(range(cfg.world_size)), backend="atb_ops")
    floor = _floor_group(dist, cfg.world_size)

    def reduce(values: list[float], op: Any) -> list[float]:
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, op=op)
        return t.tolist()

    def reduce_max(v: float) -> float:
        return reduce([v], dist.ReduceOp.MAX)[0]

    results.put(("ready", rank))
    while (command := commands.get()) is not None:
        index, round_no = command
        _run_size(rank, cfg, index, round_no, results, dist, (ours, floor), reduce, reduce_max)
        results.put(("ran", rank))
    dist.barrier()
    dist.destroy_process_group()
    results.put(("done", rank))


def _floor_group(dist: Any, world_size: int) -> Any:
    """A group of torch's backend that does nothing ("fake"), for the floor column."""
    import torch.testing._internal.distributed.fake_pg  # noqa: F401  (registers backend "fake")

    return dist.new_group(list(range(world_size)), backend="fake")


def _alltoall_buffers(cfg: BenchConfig, size: int, rank: int, dtype: torch.dtype) -> tuple[Any, ...]:
    """(call args builder, output, check, bytes, count, reused buffers) for all_to_all_single on the bench's
    alltoallv layout."""
    plan = plan_for(cfg, size, rank)
    lay = plan.layout
    seq = workload.sequence_for(plan.matrix, dtype)
    send = torch.empty(lay.send_numel, dtype=dtype)
    workload.fill_send(send, lay, rank, cfg.seed, seq)
    out = torch.empty(lay.recv_numel, dtype=dtype)

    def call(group: Any) -> Callable[[], Any]:
        import torch.distributed as dist

        return functools.partial(dist.all_to_all_single, out, send, lay.recv_counts, lay.send_counts, group=group)

    return call, out, lambda: workload.count_wrong(out, lay, rank, cfg.seed, seq), plan.bytes, plan.count, (send, out)


def _collective_buffers(cfg: BenchConfig, size: int, rank: int, dtype: torch.dtype) -> tuple[Any, ...]:
    """(call args builder, output, check, bytes, count, reset, reused buffers) for the other collectives
    (collectives.py's data and goldens)."""
    import torch.distributed as dist

    n, kind = cfg.world_size, cfg.op
    numel_in, numel_out = collectives.shapes(kind, size, n, dtype)
    nbytes, count = row_bytes(cfg, size)
    want = collectives.expected(kind, numel_in, rank, n, dtype)
    mine = collectives.values(numel_in, rank, dtype)
    x = mine.clone()
    out = torch.empty(numel_out, dtype=dtype) if kind in ("reduce_scatter", "allgather") else x

    def call(group: Any) -> Callable[[], Any]:
        if kind == "allreduce":
            return functools.partial(dist.all_reduce, x, group=group)
        if kind == "broadcast":
            return functools.partial(dist.broadcast, x, collectives.ROOT, group=group)
        if kind == "allgather":
            return functools.partial(dist.all_gather_into_tensor, out, x, group=group)
        return functools.partial(dist.reduce_scatter_tensor, out, x, group=group)

    def check() -> int:
        return collectives.count_wrong(out, want)

    def reset() -> None:
        # all_reduce and broadcast write their input: the checked call starts from the rank's own data.
        x.copy_(mine)
        if kind != "broadcast" or rank != collectives.ROOT:
            if out is not x:
                workload.poison(out)
            elif kind == "broadcast":
                workload.poison(x)

    return call, out, check, nbytes, count, reset, (x,) if out is x else (x, out)


def _run_size(rank: int, cfg: BenchConfig, index: int, round_no: int, results: Any, dist: Any,
              groups: tuple[Any, Any], reduce: Callable[..., list[float]],
              reduce_max: Callable[[float], float]) -> None:
    """One size: the checked call and the timed loop on the atb_ops group, then torch's floor (unchecked), then
    gloo; rank 0 reports."""
    ours, floor = groups
    dtype = workload.DTYPES[cfg.dtype]
    size = cfg.sizes[index]
    if cfg.op == "alltoallv":
        call, out, check, nbytes, count, reused = _alltoall_buffers(cfg, size, rank, dtype)

        def reset() -> None:
            workload.poison(out)
    else:
        call, out, check, nbytes, count, reset, reused = _collective_buffers(cfg, size, rank, dtype)
    timed: dict[str, tuple[float, float]] = {}
    for key, group, label in (("atb", ours, "atb_ops"), ("floor", floor, "torch's floor"), ("gloo", None, "gloo")):
        if key == "gloo" and not cfg.gloo:
            timed[key] = (float("nan"), 0)
            continue
        if rank == 0:
            results.put(("progress", f"{workload.format_bytes(size)}: {CALLS[cfg.op]} on {label}"))
        fn = call(group)
        wrong = 0
        if cfg.check and key != "floor":
            reset()
            fn()
            wrong = check()
        timed[key] = (time_loop(fn, cfg, reduce_max, dist.barrier, lambda: None, reused), wrong)
    _report(rank, index, round_no, size, nbytes, count, timed, results, reduce)
