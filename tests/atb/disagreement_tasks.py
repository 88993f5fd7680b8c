"""Rank-side code of tests/atb/test_disagreement.py: ranks of one communicator that call different things.

Each task returns, per call, either ("ok", output values) or ("error", message), so the test can assert that
every rank raised the same clear error and that no rank got the other call's data.
"""

from __future__ import annotations

import json

import torch

from tests.support.backends import use_backend


def _op(name: str, rank: int, world_size: int, backend: str, domain: str, **extra) -> torch.ScriptObject:
    use_backend(backend)
    op = torch.classes.OperationTorch.OperationTorch(name)
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend, "commDomain": domain, **extra}))
    return op


def _attempt(fn) -> tuple[str, object]:
    try:
        out = fn()
    except RuntimeError as e:
        return ("error", str(e).splitlines()[0])
    return ("ok", out.reshape(-1).tolist())


def _gather_call(rank: int, world_size: int, backend: str, domain: str, n: int):
    op = _op("AllGatherOperation", rank, world_size, backend, domain)
    x = torch.arange(n, dtype=torch.float32) + 1000 * rank
    return lambda: op.execute([x])[0]


def _alltoall_call(kind: str, rank: int, world_size: int, backend: str, domain: str, n: int):
    """An all-to-all moving n elements between every pair: the same count matrix as AllGather of n."""
    x = torch.arange(n * world_size, dtype=torch.float32) + 1000 * rank + 0.5
    counts = [n] * world_size
    displs = [i * n for i in range(world_size)]
    if kind == "AllToAllOperation":
        op = _op(kind, rank, world_size, backend, domain)
        return lambda: op.execute([x])[0]
    if kind == "AllToAllVOperation":
        op = _op(kind, rank, world_size, backend, domain, sendCounts=counts, sdispls=displs, recvCounts=counts,
                 rdispls=displs)
        return lambda: op.execute([x])[0]
    op = _op(kind, rank, world_size, backend, domain)
    t = torch.tensor(counts, dtype=torch.int64)
    d = torch.tensor(displs, dtype=torch.int64)
    return lambda: op.execute([x, t, d, t, d, torch.empty(n * world_size)])[0]


def different_order(rank: int, world_size: int, backend: str, domain: str, other: str) -> dict:
    """Rank 0 calls AllGather then `other`; the others call `other` then AllGather. Then both ranks run one
    more AllGather in the same order, to show the communicator stayed usable and in step."""
    n = 4
    gather = _gather_call(rank, world_size, backend, domain, n)
    alltoall = _alltoall_call(other, rank, world_size, backend, domain, n)
    order = [gather, alltoall] if rank == 0 else [alltoall, gather]
    results = [_attempt(call) for call in order]
    after = _attempt(gather)
    return {"calls": results, "after": after}


def reduction_disagreement(rank: int, world_size: int, backend: str, domain: str, case: str) -> tuple[str, object]:
    """AllReduce / AllGather / Broadcast where rank 1 passes another size, dtype or reduce op than rank 0."""
    odd = rank == 1
    if case == "allreduce-size":
        op = _op("AllReduceOperation", rank, world_size, backend, domain, allReduceType="sum")
        x = torch.ones(1500 if odd else 1000)
        return _attempt(lambda: op.execute([x])[0])
    if case == "allreduce-dtype":
        op = _op("AllReduceOperation", rank, world_size, backend, domain, allReduceType="sum")
        x = torch.ones(1000, dtype=torch.int32 if odd else torch.float32)
        return _attempt(lambda: op.execute([x])[0])
    if case == "allreduce-op":
        op = _op("AllReduceOperation", rank, world_size, backend, domain, allReduceType="max" if odd else "sum")
        x = torch.full((8,), float(rank + 1))
        return _attempt(lambda: op.execute([x])[0])
    if case == "allgather-size":
        op = _op("AllGatherOperation", rank, world_size, backend, domain)
        x = torch.ones(1200 if odd else 1000)
        return _attempt(lambda: op.execute([x])[0])
    if case == "broadcast-size":
        op = _op("BroadcastOperation", rank, world_size, backend, domain, rankRoot=0)
        x = torch.full((1200 if odd else 1000,), float(rank))

        def run():
            op.execute([x])
            return x

        return _attempt(run)
    if case == "broadcast-root":
        # The communicator exists already (made with one rankRoot, and kept alive by `warm`), so the roots
        # differ only in the call.
        warm = _gather_call(rank, world_size, backend, domain, 2)
        warm()
        op = _op("BroadcastOperation", rank, world_size, backend, domain, rankRoot=1 if odd else 0)
        x = torch.full((16,), float(rank))

        def run_root():
            op.execute([x])
            return x

        result = _attempt(run_root)
        del warm
        return result
    raise ValueError(case)
