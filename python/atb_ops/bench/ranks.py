"""The benchmark's rank processes: one ATB operation (AllToAllVV2, AllReduce or ReduceScatter, by ``--op``)
and one gloo group per rank.

Each rank runs every size: the checked call, warm-up, then the timed loop through ``execute_out`` of
``atb_ops.Operation`` (pybind11) with the same input/output tensors reused on every call (the path a training
loop takes, and the one that shows small-message latency). Then, as asked, the same call through the TorchScript
class ``torch.classes.OperationTorch.OperationTorch`` (what ATB's scripts construct), on ``atb_ops.shm_empty``
buffers, the same collective through ``atb_ops.distributed`` (``--api distributed``), and torch.distributed's on
the gloo group.
Rank 0 reduces the per-rank figures (time: max over ranks; #wrong: sum) and hands each size's row to the
parent process.
"""

from __future__ import annotations

import functools
import json
import os
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from atb_ops.bench import collectives, pages, workload


@dataclass
class BenchConfig:
    """Everything the ranks (and the Open MPI helper) need to reproduce one run."""

    world_size: int = 2
    op: str = "alltoallv"  # collectives.OPS
    backend: str = "shm"
    sizes: list[int] = field(default_factory=list)
    dtype: str = "float32"
    pattern: str = "uniform"
    spread: float = 4.0
    seed: int = 0
    iters: int = 0  # 0: auto, about budget_s of timed calls per size and backend
    warmup: int = 5
    budget_s: float = 0.25
    gloo: bool = True
    api: bool = False  # also time the collective through atb_ops.distributed
    shared: bool = True  # also time atb_ops with send/output tensors from atb_ops.shm_empty (CPU backends)
    torchscript: bool = True  # also time execute_out through torch.classes.OperationTorch.OperationTorch
    check: bool = True
    bind: str = "none"  # "core": rank r runs on allowed CPU r % count (as mpirun --bind-to core)
    pages: str = "huge"  # pages.CHOICES: the memory every library's buffers get

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> BenchConfig:
        return cls(**json.loads(text))


@dataclass
class Plan:
    """One size: the matrix, this rank's layout, and the byte count the table reports."""

    size: int
    matrix: list[list[int]]
    layout: workload.RankLayout
    bytes: int  # the busiest rank's bytes
    count: int  # the busiest rank's elements


def row_bytes(cfg: BenchConfig, size: int) -> tuple[int, int]:
    """(bytes, elements) a row of the table reports for `size`: nccl-tests' size of the operation."""
    dtype = workload.DTYPES[cfg.dtype]
    if cfg.op == "alltoallv":
        plan = plan_for(cfg, size, 0)
        return plan.bytes, plan.count
    numel = collectives.reported(cfg.op, *collectives.shapes(cfg.op, size, cfg.world_size, dtype))
    return numel * workload.element_size(dtype), numel


def plan_for(cfg: BenchConfig, size: int, rank: int) -> Plan:
    dtype = workload.DTYPES[cfg.dtype]
    es = workload.element_size(dtype)
    matrix = workload.count_matrix(cfg.world_size, max(size // es, 0), cfg.pattern, cfg.spread)
    moved = workload.busiest_bytes(matrix, es)
    return Plan(size, matrix, workload.rank_layout(matrix, rank), moved, moved // es)


def auto_iters(cfg: BenchConfig, est_s: float) -> int:
    """Timed iterations: cfg.iters, or enough for about cfg.budget_s (at least 5, at most 20000)."""
    if cfg.iters > 0:
        return cfg.iters
    return int(min(20000, max(5, cfg.budget_s / max(est_s, 1e-7))))


def time_loop(fn: Callable[[], Any], cfg: BenchConfig, reduce_max: Callable[[float], float],
              barrier: Callable[[], None], sync: Callable[[], None], buffers: Sequence[torch.Tensor] = ()) -> float:
    """Mean seconds per call of fn on this rank, after warm-up; every rank runs the same count.

    `buffers` (the tensors fn reads and writes every call) first get the memory cfg.pages names, whichever
    library fn calls."""
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
    barrier()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - start) / iters


def memcpy_seconds(nbytes: int, repeats: int = 5) -> float:
    """Best time of one libc memcpy of nbytes between two warm buffers (one thread)."""
    import ctypes

    src = torch.ones(nbytes, dtype=torch.uint8)
    dst = torch.zeros(nbytes, dtype=torch.uint8)
    s, d = src.data_ptr(), dst.data_ptr()
    ctypes.memmove(d, s, nbytes)
    reps = max(repeats, min(2000, (8 << 20) // max(nbytes, 1)))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(reps):
            ctypes.memmove(d, s, nbytes)
        best = min(best, (time.perf_counter() - start) / reps)
    return best


def _device_for(backend: str, rank: int) -> torch.device:
    if backend == "nccl":
        return torch.device("cuda", rank % max(torch.cuda.device_count(), 1))
    if backend == "hccl":
        return torch.device("npu", rank)
    return torch.device("cpu")


# --op -> the ATB operation timed and its param beyond rank, rankSize, rankRoot and backend.
OPERATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "alltoallv": ("AllToAllVV2Operation", {}),
    "allreduce": ("AllReduceOperation", {"allReduceType": "sum"}),
    "reduce_scatter": ("ReduceScatterOperation", {"reduceType": "sum"}),
    "allgather": ("AllGatherOperation", {}),
    "broadcast": ("BroadcastOperation", {}),
}


def rank_main(rank: int, cfg_json: str, env: dict[str, str], results: Any, commands: Any) -> None:
    """Entry point of one spawned rank.

    Waits on `commands` for (size index, round) pairs (None: stop) and runs that size once; reports
    ("ready", rank), ("row", dict), ("progress", str), ("ran", rank), ("done", rank) or ("error", str).
    """
    serve_rank(rank, cfg_json, env, results, commands, _run_rank)


def serve_rank(rank: int, cfg_json: str, env: dict[str, str], results: Any, commands: Any,
               run_rank: Callable[[int, BenchConfig, Any, Any], None]) -> None:
    """One spawned rank of any bench mode: sets `env`, runs `run_rank(rank, config, results, commands)`, and
    reports a failure to the parent as ("error", traceback) before exiting with status 1."""
    os.environ.update(env)
    try:
        run_rank(rank, BenchConfig.from_json(cfg_json), results, commands)
    except BaseException:  # noqa: BLE001 - the parent prints it with the rank
        results.put(("error", f"rank {rank}:\n{traceback.format_exc()}"))
        raise SystemExit(1) from None


def _run_rank(rank: int, cfg: BenchConfig, results: Any, commands: Any) -> None:
    import torch.distributed as dist

    import atb_ops

    torch.set_num_threads(1)  # ranks share the cores; intra-op threads would only fight them
    if cfg.bind == "core":
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    n = cfg.world_size
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}", rank=rank,
                            world_size=n)
    device = _device_for(cfg.backend, rank)
    dtype = workload.DTYPES[cfg.dtype]
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def reduce(values: list[float], op: Any) -> list[float]:
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, op=op)
        return t.tolist()

    def reduce_max(v: float) -> float:
        return reduce([v], dist.ReduceOp.MAX)[0]

    name, extra = OPERATIONS[cfg.op]
    param = json.dumps({"rank": rank, "rankSize": n, "rankRoot": 0, "backend": cfg.backend, **extra})
    op = atb_ops.Operation(name)
    op.set_param(param)
    # The TorchScript class ATB's scripts construct: the same operator object behind TorchScript's dispatch.
    ts_op = torch.classes.OperationTorch.OperationTorch(name) if cfg.torchscript else None
    if ts_op is not None:
        ts_op.set_param(param)
    run_size = _run_size if cfg.op == "alltoallv" else _run_collective_size
    results.put(("ready", rank))
    while (command := commands.get()) is not None:
        index, round_no = command
        run_size(rank, cfg, index, round_no, results, (op, ts_op), dist, device, dtype, sync, reduce, reduce_max)
        results.put(("ran", rank))
    dist.barrier()
    dist.destroy_process_group()
    results.put(("done", rank))


def _halves(count: int) -> list[int]:
    return [count // 2, count - count // 2]


def _rank_major(y: torch.Tensor, counts: list[int], n: int, experts: int) -> torch.Tensor:
    """global_scatter's expert-major rows (expert e, then source rank r; block sizes counts[r * experts + e])
    put back rank-major, for the check."""
    starts, pos = {}, 0
    for e in range(experts):
        for r in range(n):
            starts[(r, e)] = pos
            pos += counts[r * experts + e]
    blocks = [y.narrow(0, starts[(r, e)], counts[r * experts + e]) for r in range(n) for e in range(experts)]
    return torch.cat(blocks) if blocks else y


def _time_global_scatter(rank: int, cfg: BenchConfig, size: int, lay: Any, send: torch.Tensor, seq: Any,
                         results: Any, reduce_max: Callable[[float], float], dist: Any,
                         sync: Callable[[], None]) -> tuple[float, float]:
    """Paddle/FastMoE's global_scatter moving the same bytes: one element per row, every rank's block for a
    peer split between its 2 experts; checked after putting the expert-major result back in rank order."""
    from atb_ops import distributed as ad

    if rank == 0:
        results.put(("progress", f"{workload.format_bytes(size)}: atb_ops.distributed.global_scatter"))
    local = [c for count in lay.send_counts for c in _halves(count)]
    global_ = [c for count in lay.recv_counts for c in _halves(count)]
    call = functools.partial(ad.global_scatter, send, local, global_)
    wrong = 0
    if cfg.check:
        rank_major = _rank_major(call().reshape(-1).cpu(), global_, len(lay.recv_counts), 2)
        wrong = workload.count_wrong(rank_major, lay, rank, cfg.seed, seq)
    return time_loop(call, cfg, reduce_max, dist.barrier, sync, (send,)), wrong


def _run_size(rank: int, cfg: BenchConfig, index: int, round_no: int, results: Any, ops: tuple[Any, Any],
              dist: Any, device: torch.device, dtype: torch.dtype, sync: Callable[[], None],
              reduce: Callable[..., list[float]], reduce_max: Callable[[float], float]) -> None:
    """One size: checked call, then timed loops of atb_ops and gloo; rank 0 reports the row."""
    op, ts_op = ops
    execute_out = op.execute_out  # bound once: a method lookup per call would be timed too
    gloo_dtype_ok = dtype not in (torch.int16, torch.bool)  # gloo has no int16/bool: move those as bytes
    size = cfg.sizes[index]
    plan = plan_for(cfg, size, rank)
    lay = plan.layout
    if rank == 0:
        results.put(("progress", f"{workload.format_bytes(size)}: atb_ops {cfg.backend}"))
    seq = workload.sequence_for(plan.matrix, dtype)
    send = torch.empty(lay.send_numel, dtype=dtype)
    workload.fill_send(send, lay, rank, cfg.seed, seq)
    send = send.to(device)
    out = torch.empty((1, lay.recv_numel), dtype=dtype, device=device)
    # tensorForInferShape only has to have the right length: a stride-0 view costs no memory.
    infer = torch.empty(1, dtype=torch.int8, device=device).expand(lay.recv_numel)
    op.set_varaintpack_param(json.dumps(lay.pack()))
    inputs, outputs = [send, infer], [out]

    def checked_time(call: Callable[[], Any], result: torch.Tensor, source: torch.Tensor) -> tuple[float, int]:
        """The checked call (`result` starts as a sentinel), then the timed loop: (seconds per call, #wrong)."""
        wrong = 0
        if cfg.check:
            workload.poison(result)
            call()
            sync()
            wrong = workload.count_wrong(result.reshape(-1).cpu(), lay, rank, cfg.seed, seq)
        return time_loop(call, cfg, reduce_max, dist.barrier, sync, (source, result)), wrong

    atb_s, wrong = checked_time(functools.partial(execute_out, inputs, outputs), out, send)

    ts_s, ts_wrong = float("nan"), 0
    if ts_op is not None:
        if rank == 0:
            results.put(("progress", f"{workload.format_bytes(size)}: atb_ops {cfg.backend}, OperationTorch"))
        ts_op.set_varaintpack_param(json.dumps(lay.pack()))
        ts_s, ts_wrong = checked_time(functools.partial(ts_op.execute_out, inputs, outputs), out, send)

    shared_s, shared_wrong = float("nan"), 0
    if cfg.shared and device.type == "cpu" and cfg.backend in ("shm", "auto", "hccl"):
        import atb_ops

        if rank == 0:
            results.put(("progress", f"{workload.format_bytes(size)}: atb_ops {cfg.backend}, shm_empty buffers"))
        s_send = atb_ops.shm_empty(lay.send_numel, dtype=dtype)
        s_send.copy_(send)
        s_out = atb_ops.shm_empty(1, lay.recv_numel, dtype=dtype)
        s_inputs, s_outputs = [s_send, infer], [s_out]
        shared_s, shared_wrong = checked_time(functools.partial(execute_out, s_inputs, s_outputs), s_out, s_send)
        del s_send, s_out, s_inputs, s_outputs

    timed: dict[str, tuple[float, float]] = {"atb": (atb_s, wrong), "torchscript": (ts_s, ts_wrong),
                                             "shared": (shared_s, shared_wrong)}
    if cfg.api:
        from atb_ops import distributed as ad

        if rank == 0:
            results.put(("progress", f"{workload.format_bytes(size)}: atb_ops.distributed.all_to_all_v"))
        dist_call = functools.partial(ad.all_to_all_v, send, lay.send_counts, lay.sdispls, lay.recv_counts,
                                      lay.rdispls)
        dist_wrong = workload.count_wrong(dist_call().cpu(), lay, rank, cfg.seed, seq) if cfg.check else 0
        timed["dist"] = (time_loop(dist_call, cfg, reduce_max, dist.barrier, sync, (send,)), dist_wrong)
        # Paddle's alltoall_single splits rows: one element per row here, straight into `out`.
        if rank == 0:
            results.put(("progress", f"{workload.format_bytes(size)}: atb_ops.distributed.alltoall_single"))
        flat_out = out.view(-1)
        single_call = functools.partial(ad.alltoall_single, flat_out, send, lay.recv_counts, lay.send_counts)
        single_wrong = 0
        if cfg.check:  # the layouts are packed in rank order, as alltoall_single packs rows
            workload.poison(out)
            single_call()
            single_wrong = workload.count_wrong(flat_out.cpu(), lay, rank, cfg.seed, seq)
        timed["dist_single"] = (time_loop(single_call, cfg, reduce_max, dist.barrier, sync, (send, flat_out)),
                                single_wrong)
        timed["dist_scatter"] = _time_global_scatter(rank, cfg, size, lay, send, seq, results, reduce_max, dist, sync)

    gloo_s, gloo_wrong, gloo_call = float("nan"), 0.0, None
    if cfg.gloo and device.type == "cpu":
        if rank == 0:
            results.put(("progress", f"{workload.format_bytes(size)}: gloo all_to_all_single"))
        es = workload.element_size(dtype)
        scale = 1 if gloo_dtype_ok else es
        g_in = send if gloo_dtype_ok else send.view(torch.uint8)
        g_out = out.reshape(-1) if gloo_dtype_ok else out.reshape(-1).view(torch.uint8)
        in_splits = [c * scale for c in lay.send_counts]
        out_splits = [c * scale for c in lay.recv_counts]
        gloo_call = functools.partial(dist.all_to_all_single, g_out, g_in, out_splits, in_splits)

        if cfg.check:
            workload.poison(out)
            gloo_call()
            gloo_wrong = workload.count_wrong(out.reshape(-1), lay, rank, cfg.seed, seq)
        gloo_s = time_loop(gloo_call, cfg, reduce_max, dist.barrier, sync, (g_in, g_out))

    timed["gloo"] = (gloo_s, gloo_wrong)
    _report(rank, index, round_no, size, plan.bytes, plan.count, timed, results, reduce)


def _report(rank: int, index: int, round_no: int, size: int, nbytes: int, count: int,
            timed: dict[str, tuple[float, float]], results: Any, reduce: Callable[..., list[float]]) -> None:
    """Reduces each column's (seconds, #wrong) over the ranks (max, sum); rank 0 sends the row."""
    import torch.distributed as dist

    keys = sorted(timed)
    memcpy_s = memcpy_seconds(nbytes) if rank == 0 and nbytes > 0 else float("nan")
    times = reduce([timed[k][0] for k in keys], dist.ReduceOp.MAX)
    wrongs = reduce([float(timed[k][1]) for k in keys], dist.ReduceOp.SUM)
    if rank == 0:
        row: dict[str, Any] = {"index": index, "round": round_no, "size": size, "bytes": nbytes, "count": count,
                               "memcpy_s": memcpy_s}
        for k, t, w in zip(keys, times, wrongs, strict=True):
            row[k] = None if t != t else {"time_s": t, "wrong": int(w)}
        results.put(("row", row))


def _run_collective_size(rank: int, cfg: BenchConfig, index: int, round_no: int, results: Any,
                         ops: tuple[Any, Any], dist: Any, device: torch.device, dtype: torch.dtype,
                         sync: Callable[[], None], reduce: Callable[..., list[float]],
                         reduce_max: Callable[[float], float]) -> None:
    """One size of --op allreduce / reduce_scatter / allgather / broadcast: the ATB operation, then
    shm_empty buffers, atb_ops.distributed and gloo, each checked against collectives.expected first."""
    import atb_ops
    from atb_ops import distributed as ad

    op, ts_op = ops
    execute_out = op.execute_out
    size = cfg.sizes[index]
    n = cfg.world_size
    kind = cfg.op
    numel_in, numel_out = collectives.shapes(kind, size, n, dtype)
    nbytes, count = row_bytes(cfg, size)
    want = collectives.expected(kind, numel_in, rank, n, dtype)
    mine = collectives.values(numel_in, rank, dtype).to(device)

    def buffers(empty: Callable[..., torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(x, out) for the ATB call; broadcast works in place on x (no output)."""
        x = empty(numel_in, dtype=dtype)
        x.copy_(mine)
        if kind == "broadcast":
            return x, None
        return x, empty(n, numel_in, dtype=dtype) if kind == "allgather" else empty(numel_out, dtype=dtype)

    def checked(call: Callable[[], Any], got: Callable[[], torch.Tensor], what: str,
                buffers: Sequence[torch.Tensor | None]) -> tuple[float, int]:
        """The checked call (what it writes starts as a sentinel; a broadcast root keeps its data), then
        the timing on `buffers` (None entries: none)."""
        if rank == 0:
            results.put(("progress", f"{workload.format_bytes(size)}: {what}"))
        wrong = 0
        if cfg.check:
            if kind != "broadcast" or rank != collectives.ROOT:
                workload.poison(got())
            call()
            sync()
            wrong = collectives.count_wrong(got(), want)
        reused = [b for b in buffers if b is not None]
        return time_loop(call, cfg, reduce_max, dist.barrier, sync, reused), wrong

    timed: dict[str, tuple[float, float]] = {}
    x, out = buffers(functools.partial(torch.empty, device=device))
    result = x if out is None else out
    timed["atb"] = checked(functools.partial(execute_out, [x], [] if out is None else [out]), lambda: result,
                           f"atb_ops {cfg.backend}", (x, out))
    if ts_op is not None:
        ts_call = functools.partial(ts_op.execute_out, [x], [] if out is None else [out])
        timed["torchscript"] = checked(ts_call, lambda: result, f"atb_ops {cfg.backend}, OperationTorch", (x, out))
    if cfg.shared and device.type == "cpu" and cfg.backend in ("shm", "auto", "hccl"):
        s_x, s_out = buffers(atb_ops.shm_empty)
        s_result = s_x if s_out is None else s_out
        s_call = functools.partial(execute_out, [s_x], [] if s_out is None else [s_out])
        timed["shared"] = checked(s_call, lambda: s_result, f"atb_ops {cfg.backend}, shm_empty buffers", (s_x, s_out))
        del s_x, s_out, s_result, s_call
    if cfg.api:
        calls = {"allreduce": lambda: ad.all_reduce(mine), "reduce_scatter": lambda: ad.reduce_scatter(mine),
                 "allgather": lambda: ad.all_gather(mine), "broadcast": lambda: ad.broadcast(mine, collectives.ROOT)}
        last = [torch.empty(0, dtype=dtype)]  # the API returns a fresh tensor per call

        def d_call() -> None:
            last[0] = calls[kind]()

        timed["dist"] = checked(d_call, lambda: last[0], f"atb_ops.distributed, {kind}", (mine,))
    if cfg.gloo and device.type == "cpu":
        g_x, g_out = buffers(torch.empty)
        if kind == "allreduce":
            # gloo reduces in place: checked once from the input, then timed reducing the result again.
            if rank == 0:
                results.put(("progress", f"{workload.format_bytes(size)}: gloo all_reduce"))
            g_wrong = 0
            if cfg.check:
                dist.all_reduce(g_x)
                g_wrong = collectives.count_wrong(g_x, want)
            g_s = time_loop(functools.partial(dist.all_reduce, g_x), cfg, reduce_max, dist.barrier, sync, (g_x,))
            timed["gloo"] = (g_s, g_wrong)
        else:
            if kind == "broadcast":
                g_call, g_result = functools.partial(dist.broadcast, g_x, collectives.ROOT), g_x
            elif kind == "allgather":
                g_call, g_result = functools.partial(dist.all_gather_into_tensor, g_out.view(-1), g_x), g_out
            else:
                g_call, g_result = functools.partial(dist.reduce_scatter_tensor, g_out, g_x), g_out
            timed["gloo"] = checked(g_call, lambda: g_result, f"gloo, {kind}", (g_x, g_out))
    _report(rank, index, round_no, size, nbytes, count, timed, results, reduce)
