"""Rank programs for the fault tests: ranks that loop on a collective until killed, a lonely root,
and count mismatches. Each reports through a queue; none is allowed to hang (ATB_OPS_TIMEOUT)."""

from __future__ import annotations

import json
import os
import time

import torch
import torch.distributed as dist

from tests.support.environment import environment
from tests.support.golden import SENTINEL_BYTE


def _op(rank: int, world_size: int, backend: str, domain: str = ""):
    import atb_ops  # noqa: F401

    op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend, "commDomain": domain}))
    return op


def _uniform_inputs(rank: int, world_size: int, per_peer: int):
    x = torch.arange(per_peer * world_size, dtype=torch.float32) + 1000 * rank
    counts = torch.full((world_size,), per_peer, dtype=torch.int64)
    displs = torch.arange(world_size, dtype=torch.int64) * per_peer
    return [x, counts, displs, counts, displs, torch.empty(per_peer * world_size, dtype=torch.int8)]


def loop_rank(rank: int, world_size: int, backend: str, env: dict, events) -> None:
    """Runs the collective forever; reports 'ready' after the first one, then the error that ends it."""
    os.environ.update(env)
    if backend == "gloo":
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{env['MASTER_PORT']}", rank=rank, world_size=world_size
        )
    if env.get("OP") == "allreduce":  # 1 MiB: shm's reduction pipeline, where a rank spends most of a call
        import atb_ops  # noqa: F401

        op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
        op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend}))
        inputs = [torch.ones(1 << 18)]
    elif env.get("OP") == "allgather":  # 1 MiB per rank: read in place, so a rank waits for its readers
        import atb_ops  # noqa: F401

        op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
        op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend}))
        inputs = [torch.ones(1 << 18)]
    else:
        op = _op(rank, world_size, backend, env.get("DOMAIN", ""))
        # alltoallv_large: 512 KiB per peer, read in place (process_vm_readv) instead of through the eager buffers
        inputs = _uniform_inputs(rank, world_size, 1 << 17 if env.get("OP") == "alltoallv_large" else 4096)
    count = 0
    try:
        while True:
            (out,) = op.execute(inputs)
            count += 1
            if count == 1:
                events.put(("ready", rank, time.time(), ""))
            if count == int(env.get("STOP_AFTER", "0") or 0):
                expected = torch.cat(
                    [
                        torch.arange(rank * 4096, (rank + 1) * 4096, dtype=torch.float32) + 1000 * src
                        for src in range(world_size)
                    ]
                )
                events.put(("done", rank, time.time(), str(bool(torch.equal(out.view(-1), expected)))))
                return
    except RuntimeError as e:
        events.put(("error", rank, time.time(), str(e)))


def lonely_root(env: dict, events) -> None:
    """Rank 0 of 2 whose peer never comes: it waits in the rendezvous (files exist meanwhile)."""
    os.environ.update(env)
    op = _op(0, 2, "shm", env.get("DOMAIN", ""))
    events.put(("waiting", 0, time.time(), ""))
    try:
        op.execute(_uniform_inputs(0, 2, 4))
        events.put(("done", 0, time.time(), ""))
    except RuntimeError as e:
        events.put(("error", 0, time.time(), str(e)))


def lonely_peer(env: dict, events) -> None:
    """Rank 1 of 2 looking for its root: reports how its rendezvous ended."""
    os.environ.update(env)
    op = _op(1, 2, "shm", env.get("DOMAIN", ""))
    try:
        op.execute(_uniform_inputs(1, 2, 4))
        events.put(("done", 1, time.time(), ""))
    except RuntimeError as e:
        events.put(("error", 1, time.time(), str(e)))


def mismatch(rank: int, world_size: int, backend: str, timeout_s: str):
    """Rank 0 sends 3 elements to rank 1, which expects 2. Returns (error or '', guard bytes intact,
    whether the next well-formed call still works)."""
    with environment({"ATB_OPS_TIMEOUT": timeout_s}):  # the pool's value again for the next case
        op = _op(rank, world_size, backend, "mismatch")
        x = torch.arange(8, dtype=torch.float32)
        send = [[2, 3], [2, 2]][rank]
        recv = [[2, 2], [2, 2]][rank]  # rank 1 expects 2 from rank 0, which sends 3
        counts = [torch.tensor(v, dtype=torch.int64) for v in (send, [0, 2], recv, [0, 2])]
        total = sum(recv)
        guard = 64
        buf = torch.full((total + 2 * guard,), 0, dtype=torch.float32)
        buf.view(torch.uint8).fill_(SENTINEL_BYTE)
        before = buf.clone()
        out = buf[guard : guard + total].view(1, total)
        error = ""
        try:
            op.execute_out([x, *counts, torch.empty(total, dtype=torch.int8)], [out])
        except RuntimeError as e:
            error = str(e)
        intact = bool(torch.equal(buf[:guard], before[:guard]) and torch.equal(buf[-guard:], before[-guard:]))
        good = [torch.tensor(v, dtype=torch.int64) for v in ([2, 2], [0, 2], [2, 2], [0, 2])]
        (y,) = op.execute([x, *good, torch.empty(4, dtype=torch.int8)])
        recovered = y.view(-1).tolist() == [float(2 * rank), float(2 * rank + 1)] * 2
        return error, intact, recovered
