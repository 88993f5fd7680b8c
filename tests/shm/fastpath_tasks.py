"""Rank programs for the shm fast-path tests (tests/shm/test_shm_fastpath.py).

Every element encodes (source rank, destination rank, index, call number), so a receiver checks its
output by itself: an element from the wrong sender, the wrong offset or an earlier call, or one never
written (the reused output starts as a sentinel byte pattern), is counted as wrong. Send regions are
shuffled with gaps between them.
"""

from __future__ import annotations

import json
import os
import random
import threading

import torch

from tests.support.environment import environment
from tests.support.golden import DTYPES
from tests.support.smaps import mappings_of

SENTINEL = 0x7F  # outside every dtype's value range below (|v| <= 125, bool 0/1, floats NaN/huge)


def values(src: int, dst: int, count: int, dtype: torch.dtype, call: int) -> torch.Tensor:
    """What src sends dst on call number `call`: exact in every dtype."""
    k = torch.arange(count, dtype=torch.int64)
    v = (k * 131 + src * 1009 + dst * 17 + call * 53 + 7) % 251
    if dtype == torch.bool:
        return (v & 1).to(torch.bool)
    if dtype == torch.uint8:
        return ((v - 125) % 256).to(torch.uint8)  # skips 126..130, so never the sentinel
    return (v - 125).to(dtype)


def layout(matrix: list[list[int]], rank: int, seed: int, gaps: bool) -> tuple[list[int], list[int], int, list[int],
                                                                               list[int], int]:
    """Send and receive regions in a shuffled order; gaps between send regions when asked (the output is
    exactly sum(recvCounts) long, so receive regions tile it)."""
    n = len(matrix)
    rng = random.Random(seed * 7919 + rank)
    send, recv = list(matrix[rank]), [row[rank] for row in matrix]

    def place(counts: list[int], with_gaps: bool) -> tuple[list[int], int]:
        order = list(range(n))
        rng.shuffle(order)
        displs, pos = [0] * n, 0
        for j in order:
            pos += rng.randint(0, 3) if with_gaps else 0
            displs[j] = pos
            pos += counts[j]
        return displs, pos + (rng.randint(0, 3) if with_gaps else 0)

    sdispls, send_numel = place(send, gaps)
    rdispls, recv_numel = place(recv, False)
    return send, sdispls, send_numel, recv, rdispls, recv_numel


def _bytes_ne(a: torch.Tensor, b: torch.Tensor) -> int:
    if a.dtype == torch.bool:
        a, b = a.view(torch.uint8), b.view(torch.uint8)
    return int(a.ne(b).sum())


def _alloc(shape: tuple[int, ...], dtype: torch.dtype, shared: bool) -> torch.Tensor:
    import atb_ops

    return atb_ops.shm_empty(shape, dtype=dtype) if shared else torch.empty(shape, dtype=dtype)


class Case:
    """One rank's side of a layout: its tensors, reused call after call, and the check.

    alloc: which of the send buffer and the output come from atb_ops.shm_empty ("", "send", "recv", "both").
    """

    def __init__(self, rank: int, matrix: list[list[int]], dtype: torch.dtype, seed: int, gaps: bool,
                 alloc: str = "") -> None:
        self.rank, self.matrix, self.dtype = rank, matrix, dtype
        self.sc, self.sd, send_numel, self.rc, self.rd, recv_numel = layout(matrix, rank, seed, gaps)
        self.x = _alloc((send_numel,), dtype, alloc in ("send", "both"))
        self.x.zero_()
        self.out = _alloc((1, recv_numel), dtype, alloc in ("recv", "both"))
        self.counts = [torch.tensor(v, dtype=torch.int64) for v in (self.sc, self.sd, self.rc, self.rd)]
        self.infer = torch.empty(1, dtype=torch.int8).expand(sum(self.rc))

    def prepare(self, call: int) -> None:
        """New data in the same send buffer; the output back to the sentinel."""
        for dst, (c, d) in enumerate(zip(self.sc, self.sd, strict=True)):
            self.x[d : d + c] = values(self.rank, dst, c, self.dtype, call)
        self.out.reshape(-1).view(torch.uint8).fill_(SENTINEL)

    def wrong(self, call: int, out: torch.Tensor | None = None) -> int:
        """Elements that differ from what their sender sent on this call (a sentinel left over counts)."""
        flat = (self.out if out is None else out).reshape(-1)
        return sum(
            _bytes_ne(flat[d : d + c], values(src, self.rank, c, self.dtype, call))
            for src, (c, d) in enumerate(zip(self.rc, self.rd, strict=True))
        )


def _op(rank: int, world_size: int, domain: str, pack: Case | None = None):
    import atb_ops  # noqa: F401

    op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": "shm", "commDomain": domain}))
    if pack is not None:
        op.set_varaintpack_param(
            json.dumps({"sendCounts": pack.sc, "sdispls": pack.sd, "recvCounts": pack.rc, "rdispls": pack.rd})
        )
    return op


def run_matrices(
    rank: int,
    world_size: int,
    dtype_name: str,
    matrices: list[list[list[int]]],
    domain: str,
    repeats: int,
    seed: int,
    env: dict[str, str] | None = None,
    alloc: str = "",
) -> list[int]:
    """Every matrix `repeats` times through one operation, reusing its tensors; #wrong per matrix.

    Odd calls pass the counts as tensors and a fresh output through execute; even calls use execute_out
    into the reused output, so both entry points and both buffer parities see every layout.
    """
    dtype = DTYPES[dtype_name]
    with environment(env):
        op = _op(rank, world_size, domain)
        execute_out, execute = op.execute_out, op.execute
        result = []
        for m, matrix in enumerate(matrices):
            case = Case(rank, matrix, dtype, seed + m, gaps=True, alloc=alloc)
            bad = 0
            for call in range(repeats):
                case.prepare(call)
                inputs = [case.x, *case.counts, case.infer]
                if call % 2:
                    (fresh,) = execute(inputs)
                    bad += case.wrong(call, fresh)
                else:
                    execute_out(inputs, [case.out])
                    bad += case.wrong(call)
            result.append(bad)
        return result


def run_pack_loop(rank: int, world_size: int, dtype_name: str, matrix: list[list[int]], domain: str,
                  repeats: int, alloc: str = "") -> int:
    """The benchmark's path: the variant pack set once, execute_out([x, infer], [out]) on reused tensors."""
    case = Case(rank, matrix, DTYPES[dtype_name], seed=11, gaps=True, alloc=alloc)
    op = _op(rank, world_size, domain, pack=case)
    execute_out = op.execute_out
    bad = 0
    for call in range(repeats):
        case.prepare(call)
        execute_out([case.x, case.infer], [case.out])
        bad += case.wrong(call)
    return bad


def run_concurrent_domains(rank: int, world_size: int, matrices: list[list[list[int]]], repeats: int) -> list[int]:
    """One thread per matrix, each on its own commDomain, all running at once; #wrong per thread."""
    results = [0] * len(matrices)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            case = Case(rank, matrices[i], torch.float32, seed=100 + i, gaps=True, alloc=("", "both", "send")[i % 3])
            op = _op(rank, world_size, f"fastpath_concurrent_{i}")
            execute_out = op.execute_out
            for call in range(repeats):
                case.prepare(call + 1000 * i)
                execute_out([case.x, *case.counts, case.infer], [case.out])
                results[i] += case.wrong(call + 1000 * i)
        except BaseException as e:  # noqa: BLE001 - re-raised in the rank's main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(matrices))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def bad_eager_setting(rank: int, world_size: int, value: str) -> str:
    """The error a malformed ATB_OPS_SHM_EAGER gives (the options are read at set_param, before anything runs)."""
    with environment({"ATB_OPS_SHM_EAGER": value}):
        try:
            op = _op(rank, world_size, f"fastpath_bad_eager_{value}")
            op.execute([torch.zeros(1), *[torch.tensor([v]) for v in (1, 0, 1, 0)], torch.empty(1)])
        except RuntimeError as e:
            return str(e)
    return ""


def late_rank_cpu(rank: int, world_size: int, late_s: float) -> tuple[float, float]:
    """Rank 0 arrives `late_s` late; every rank returns (wall seconds, CPU seconds) of its call."""
    import time

    case = Case(rank, [[5] * world_size for _ in range(world_size)], torch.float32, seed=3, gaps=False)
    op = _op(rank, world_size, "fastpath_late")
    execute_out = op.execute_out
    case.prepare(0)
    execute_out([case.x, *case.counts, case.infer], [case.out])  # communicator up, ranks in step
    case.prepare(1)
    if rank == 0:
        time.sleep(late_s)
    wall, cpu = time.perf_counter(), time.process_time()
    execute_out([case.x, *case.counts, case.infer], [case.out])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert case.wrong(1) == 0
    return wall, cpu


def arena_state(rank: int, world_size: int) -> dict:
    """Whether this rank's arena is on, and whether an execute() output of 1 MiB landed in it."""
    import atb_ops

    case = Case(rank, [[(1 << 18) // world_size] * world_size for _ in range(world_size)], torch.float32, 5, False)
    op = _op(rank, world_size, "fastpath_arena_state")
    case.prepare(0)
    (out,) = op.execute([case.x, *case.counts, case.infer])
    return {"info": atb_ops.shm_arena_info(), "output_shared": atb_ops.shm_is_shared(out),
            "wrong": case.wrong(0, out)}


def arena_off_on_rank0_main(rank: int, world_size: int, job: str, matrices: list, results) -> None:
    """A spawned rank whose arena is off on rank 0 only (set before atb_ops loads): the others must
    notice and keep to process_vm_readv for everything."""
    import traceback

    os.environ["ATB_OPS_JOB_ID"] = job
    os.environ["ATB_OPS_TIMEOUT"] = "60"
    if rank == 0:
        os.environ["ATB_OPS_SHM_ARENA"] = "0"
    try:
        wrong = run_matrices(rank, world_size, "float32", matrices, "fastpath_arena_off", 2, 4, None, "both")
        results.put((rank, "", (wrong, arena_state(rank, world_size))))
    except BaseException:  # noqa: BLE001 - reported to the test
        results.put((rank, traceback.format_exc(), None))


def route_counters(rank: int, world_size: int, dtype_name: str, matrix: list[list[int]], domain: str,
                   env: dict[str, str] | None, alloc: str) -> dict:
    """One execute_out of `matrix` (a fresh commDomain, `env` set while it is made): the elements that are
    wrong and what this rank's communicator counted per route (atb_ops._C.communicator_stats)."""
    import atb_ops

    case = Case(rank, matrix, DTYPES[dtype_name], 11, gaps=True, alloc=alloc)
    case.prepare(0)
    with environment(env):  # read when the first call makes the communicator
        op = _op(rank, world_size, domain)
        op.execute_out([case.x, *case.counts, case.infer], [case.out])
    (stats,) = atb_ops._C.communicator_stats(domain)
    return {"wrong": case.wrong(0), **stats}


def reduction_routes(rank: int, world_size: int, numel: int, domain: str) -> dict:
    """One float32 AllReduce of `numel` elements: whether it is right, and the route counters."""
    import atb_ops

    op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": "shm", "allReduceType": "sum",
                             "commDomain": domain}))
    x = torch.arange(numel, dtype=torch.float32) + rank
    out = op.execute([x])[0]
    want = torch.arange(numel, dtype=torch.float32) * world_size + sum(range(world_size))
    (stats,) = atb_ops._C.communicator_stats(domain)
    return {"right": bool(torch.equal(out, want)), **stats}


def allgather_calls(rank: int, world_size: int, dtype_name: str, counts: list[int], domain: str, repeats: int,
                    alloc: str = "", env: dict[str, str] | None = None) -> dict:
    """AllGatherOperation.execute_out over each count in turn, `repeats` calls each, new data every call into
    reused buffers (from atb_ops.shm_empty where `alloc` names them: "send", "recv", "both"); returns the
    elements that differ from what their senders sent on that call, and this rank's route counters."""
    import atb_ops

    dtype = DTYPES[dtype_name]
    wrong, call = 0, 0
    with environment(env):  # read while the operation and its communicator are made
        op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
        op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": "shm", "commDomain": domain}))
        for count in counts:
            x = _alloc((count,), dtype, alloc in ("send", "both"))
            out = _alloc((world_size, count), dtype, alloc in ("recv", "both"))
            for _ in range(repeats):
                call += 1
                x.copy_(values(rank, 0, count, dtype, call))
                out.view(torch.uint8).fill_(SENTINEL)
                op.execute_out([x], [out])
                wrong += sum(_bytes_ne(out[src], values(src, 0, count, dtype, call)) for src in range(world_size))
    (stats,) = atb_ops._C.communicator_stats(domain)
    return {"wrong": wrong, **stats}


def _huge_page_bytes() -> int:
    """The kernel's transparent huge page size; 0 where it has none or THP is "never"."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            if "[never]" in f.read():
                return 0
        with open("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size") as f:
            return int(f.read())
    except OSError:
        return 0


def _whole_huge_pages(t: torch.Tensor, huge: int) -> int:
    """Bytes of the huge pages lying wholly inside t's memory."""
    first = -(-t.data_ptr() // huge) * huge
    last = (t.data_ptr() + t.nbytes) // huge * huge
    return max(0, last - first)


def _anon_huge_kib(t: torch.Tensor) -> int:
    """AnonHugePages (KiB) of this process's mappings that overlap t's memory (/proc/self/smaps)."""
    return sum(int(fields.get("AnonHugePages", "0").split()[0]) for _, fields in mappings_of(t))


def _collapse_works(huge: int) -> bool:
    """Whether this kernel collapses an ordinary anonymous buffer onto huge pages when asked (Linux 6.1+)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    control = torch.ones(4 * huge // 4, dtype=torch.float32)
    first = -(-control.data_ptr() // huge) * huge
    madv_hugepage, madv_collapse = 14, 25
    libc.madvise(first, huge, madv_hugepage)
    return libc.madvise(first, huge, madv_collapse) == 0 and _anon_huge_kib(control) * 1024 >= huge


def reused_buffer_pages(rank: int, world_size: int, numel: int, calls: int, fresh: bool, domain: str,
                        env: dict[str, str] | None = None) -> dict:
    """AllToAllVV2 execute_out, equal splits of `numel` float32 per rank, `calls` times with new data each
    call: into the same two tensors, or (`fresh`) into new ones every call, the old ones kept alive so that
    no address repeats. Returns the wrong elements, the communicator's huge_page_bytes after each call, the
    whole huge pages of the last send and output tensors, their AnonHugePages (KiB, /proc/self/smaps), the huge
    page size, and
    whether this kernel collapses a control buffer of the test's own (so a refusing kernel is told apart)."""
    import atb_ops

    huge = _huge_page_bytes()
    chunk = numel // world_size
    displs = [j * chunk for j in range(world_size)]
    with environment(env):  # read when the first call makes the communicator
        op = _op(rank, world_size, domain)
        op.set_varaintpack_param(json.dumps({"sendCounts": [chunk] * world_size, "sdispls": displs,
                                             "recvCounts": [chunk] * world_size, "rdispls": displs}))
        infer = torch.empty(1, dtype=torch.int8).expand(numel)
        kept, wrong, counted = [], 0, []
        x, out = torch.empty(numel), torch.empty(1, numel)
        for call in range(1, calls + 1):
            if fresh and call > 1:
                kept.append((x, out))
                x, out = torch.empty(numel), torch.empty(1, numel)
            for dst in range(world_size):
                x[dst * chunk:(dst + 1) * chunk] = values(rank, dst, chunk, torch.float32, call)
            out.view(torch.uint8).fill_(SENTINEL)
            op.execute_out([x, infer], [out])
            got = out.view(-1)
            wrong += sum(_bytes_ne(got[src * chunk:(src + 1) * chunk], values(src, rank, chunk, torch.float32, call))
                         for src in range(world_size))
            (stats,) = atb_ops._C.communicator_stats(domain)
            counted.append(stats["huge_page_bytes"])
    whole = _whole_huge_pages(x, huge) + _whole_huge_pages(out, huge) if huge else 0
    return {"wrong": wrong, "counted": counted, "whole": whole, "smaps_kib": _anon_huge_kib(x) + _anon_huge_kib(out),
            "huge": huge, "collapse_works": huge > 0 and _collapse_works(huge)}
