"""Rank tasks of test_gloo_check_exchange.py: ATB operators on backend "gloo", small calls (done inside the
call's cross-check) and large ones (moved after it), each against a golden computed here from every rank's
seeded data, with this rank's communicator counters (atb_ops._C.communicator_stats)."""

from __future__ import annotations

import json

import torch

from tests.shm.fastpath_tasks import Case

SENTINEL = 0x5A


def _operation(name: str, rank: int, world_size: int, domain: str, **param: object):
    import atb_ops  # noqa: F401  (registers OperationTorch)

    op = torch.classes.OperationTorch.OperationTorch(name)
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": "gloo", "commDomain": domain, **param}))
    return op


def _eager_bytes(domain: str) -> int:
    import atb_ops

    (stats,) = atb_ops._C.communicator_stats(domain)
    return int(stats["eager_bytes"])


def alltoallv(rank: int, world_size: int, matrix: list[list[int]], domain: str) -> dict:
    """One AllToAllVV2Operation.execute_out of `matrix` (float32, displacements with gaps): elements that differ
    from what their senders sent, and the bytes that came inside the check."""
    case = Case(rank, matrix, torch.float32, 5, gaps=True)
    case.prepare(0)
    op = _operation("AllToAllVV2Operation", rank, world_size, domain)
    op.execute_out([case.x, *case.counts, case.infer], [case.out])
    return {"wrong": case.wrong(0), "eager_bytes": _eager_bytes(domain)}


def _data(rank: int, numel: int, dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(100 + rank)
    return torch.randn(numel, generator=g).to(dtype)


def _sentinel(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    out = torch.empty(shape, dtype=dtype)
    out.view(torch.uint8).fill_(SENTINEL)
    return out


def collectives(rank: int, world_size: int, numel: int, dtype_name: str, domain: str) -> dict:
    """AllReduce (sum), AllGather and Broadcast (root 1) of `numel` elements: for each, whether every element is
    what the golden says (the all-reduce's also its largest error relative to the golden's largest value), and the
    bytes that came inside the check so far (cumulative, in that order)."""
    dtype = getattr(torch, dtype_name)
    everyone = [_data(r, numel, dtype) for r in range(world_size)]
    mine = everyone[rank].clone()
    result: dict[str, object] = {}
    # The operators share one communicator (one commDomain), which lives as long as one of them does.
    ops = {name: _operation(name, rank, world_size, domain, **param) for name, param in (
        ("AllReduceOperation", {"allReduceType": "sum"}), ("AllGatherOperation", {}),
        ("BroadcastOperation", {"rankRoot": 1 % world_size}))}

    # Sum in rank order in float32, rounded once: what every atb_ops backend promises for 16-bit floats.
    acc = everyone[0].to(torch.float32)
    for r in range(1, world_size):
        acc = acc + everyone[r].to(torch.float32)
    out = _sentinel((numel,), dtype)
    ops["AllReduceOperation"].execute_out([mine], [out])
    result["allreduce"] = bool(torch.equal(out, acc.to(dtype)))
    # gloo's own all-reduce (a large call) adds in its ring's order: equal up to float32 rounding
    result["allreduce_err"] = float((out.double() - acc.double()).abs().max() / acc.double().abs().max())
    result["allreduce_eager"] = _eager_bytes(domain)

    gathered = _sentinel((world_size, numel), dtype)
    ops["AllGatherOperation"].execute_out([mine], [gathered])
    result["allgather"] = bool(torch.equal(gathered, torch.stack(everyone)))
    result["allgather_eager"] = _eager_bytes(domain)

    root = 1 % world_size
    buf = mine.clone() if rank == root else _sentinel((numel,), dtype)
    ops["BroadcastOperation"].execute([buf])  # writes its input
    result["broadcast"] = bool(torch.equal(buf, everyone[root]))
    result["broadcast_eager"] = _eager_bytes(domain)
    result["input_untouched"] = bool(torch.equal(mine, everyone[rank]))
    return result


def cycle(rank: int, world_size: int, big_numel: int, rounds: int, domain: str) -> dict:
    """`rounds` rounds of an AllGather of `big_numel` float32 (over the check's usual room) followed by an AllReduce
    of 10: per round, the bytes each call took from inside the check, and whether every output was the golden."""
    small = 10
    everyone = [_data(r, big_numel, torch.float32) for r in range(world_size)]
    addends = [_data(r, small, torch.float32) for r in range(world_size)]
    total = addends[0].clone()
    for r in range(1, world_size):
        total = total + addends[r]
    gather = _operation("AllGatherOperation", rank, world_size, domain)
    reduce = _operation("AllReduceOperation", rank, world_size, domain, allReduceType="sum")
    result: dict[str, list] = {"gather_eager": [], "reduce_eager": [], "right": []}
    before = 0  # the operators' communicator is made by their first call
    for _ in range(rounds):
        gathered = _sentinel((world_size, big_numel), torch.float32)
        gather.execute_out([everyone[rank]], [gathered])
        between = _eager_bytes(domain)
        out = _sentinel((small,), torch.float32)
        reduce.execute_out([addends[rank]], [out])
        result["gather_eager"].append(between - before)
        after = _eager_bytes(domain)
        result["reduce_eager"].append(after - between)
        before = after
        result["right"].append(bool(torch.equal(gathered, torch.stack(everyone)) and torch.equal(out, total)))
    return result
