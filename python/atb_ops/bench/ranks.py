"""The benchmark's rank processes: one AllToAllVV2Operation and one gloo group per rank.

Each rank runs every size: the checked call, warm-up, then the timed loop through ``execute_out``
with the variant pack set once and the same input/output tensors reused on every call (the path a
training loop takes, and the one that shows small-message latency). Then the same counts through
``torch.distributed.all_to_all_single`` on the gloo group. Rank 0 reduces the per-rank figures
(time: max over ranks; #wrong: sum) and hands each size's row to the parent process.
"""

from __future__ import annotations

import functools
import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from atb_ops.bench import workload


@dataclass
class BenchConfig:
    """Everything the ranks (and the Open MPI helper) need to reproduce one run."""

    world_size: int = 2
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
    shared: bool = True  # also time atb_ops with send/output tensors from atb_ops.shm_empty (CPU backends)
    check: bool = True
    bind: str = "none"  # "core": rank r runs on allowed CPU r % count (as mpirun --bind-to core)

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
              barrier: Callable[[], None], sync: Callable[[], None]) -> float:
    """Mean seconds per call of fn on this rank, after warm-up; every rank runs the same count."""
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


def rank_main(rank: int, cfg_json: str, env: dict[str, str], results: Any, commands: Any) -> None:
    """Entry point of one spawned rank.

    Waits on `commands` for (size index, round) pairs (None: stop) and runs that size once; reports
    ("ready", rank), ("row", dict), ("progress", str), ("ran", rank), ("done", rank) or ("error", str).
    """
    os.environ.update(env)
    try:
        _run_rank(rank, BenchConfig.from_json(cfg_json), results, commands)
    except BaseException:  # noqa: BLE001 - the parent prints it with the rank
        results.put(("error", f"rank {rank}:\n{traceback.format_exc()}"))
        raise SystemExit(1) from None


def _run_rank(rank: int, cfg: BenchConfig, results: Any, commands: Any) -> None:
    import torch.distributed as dist

    import atb_ops  # noqa: F401  (registers OperationTorch)

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

    op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
    op.set_param(json.dumps({"rank": rank, "rankSize": n, "rankRoot": 0, "backend": cfg.backend}))
    results.put(("ready", rank))
    while (command := commands.get()) is not None:
        index, round_no = command
        _run_size(rank, cfg, index, round_no, results, op, dist, device, dtype, sync, reduce, reduce_max)
        results.put(("ran", rank))
    dist.barrier()
    dist.destroy_process_group()
    results.put(("done", rank))


def _run_size(rank: int, cfg: BenchConfig, index: int, round_no: int, results: Any, op: Any, dist: Any,
              device: torch.device, dtype: torch.dtype, sync: Callable[[], None], reduce: Callable[..., list[float]],
              reduce_max: Callable[[float], float]) -> None:
    """One size: checked call, then timed loops of atb_ops and gloo; rank 0 reports the row."""
    execute_out = op.execute_out  # bound once: looking up a TorchScript method costs microseconds
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

    wrong = 0
    if cfg.check:
        workload.poison(out)
        execute_out(inputs, outputs)
        sync()
        wrong = workload.count_wrong(out.reshape(-1).cpu(), lay, rank, cfg.seed, seq)
    atb_s = time_loop(functools.partial(execute_out, inputs, outputs), cfg, reduce_max, dist.barrier, sync)

    shared_s, shared_wrong = float("nan"), 0.0
    if cfg.shared and device.type == "cpu" and cfg.backend in ("shm", "auto", "hccl"):
        import atb_ops

        if rank == 0:
            results.put(("progress", f"{workload.format_bytes(size)}: atb_ops {cfg.backend}, shm_empty buffers"))
        s_send = atb_ops.shm_empty(lay.send_numel, dtype=dtype)
        s_send.copy_(send)
        s_out = atb_ops.shm_empty(1, lay.recv_numel, dtype=dtype)
        s_inputs, s_outputs = [s_send, infer], [s_out]
        if cfg.check:
            workload.poison(s_out)
            execute_out(s_inputs, s_outputs)
            shared_wrong = workload.count_wrong(s_out.reshape(-1), lay, rank, cfg.seed, seq)
        shared_s = time_loop(functools.partial(execute_out, s_inputs, s_outputs), cfg, reduce_max, dist.barrier, sync)
        del s_send, s_out, s_inputs, s_outputs

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
        gloo_s = time_loop(gloo_call, cfg, reduce_max, dist.barrier, sync)

    memcpy_s = memcpy_seconds(plan.bytes) if rank == 0 and plan.bytes > 0 else float("nan")
    atb_max, shared_max, gloo_max = reduce([atb_s, shared_s, gloo_s], dist.ReduceOp.MAX)
    wrong_sum, shared_wrong_sum, gloo_wrong_sum = reduce([float(wrong), float(shared_wrong), float(gloo_wrong)],
                                                         dist.ReduceOp.SUM)
    if rank == 0:
        results.put(("row", {
            "index": index, "round": round_no, "size": size, "bytes": plan.bytes, "count": plan.count,
            "atb": {"time_s": atb_max, "wrong": int(wrong_sum)},
            "shared": None if shared_s != shared_s else {"time_s": shared_max, "wrong": int(shared_wrong_sum)},
            "gloo": None if gloo_s != gloo_s else {"time_s": gloo_max, "wrong": int(gloo_wrong_sum)},
            "memcpy_s": memcpy_s,
        }))
