"""Rank-side code of tests/reliability/test_hardening.py: misuse a careless or hostile user could try."""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import torch

from tests.support.environment import environment


def _alltoallvv2(rank: int, world_size: int, domain: str, backend: str = "shm"):
    op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend, "commDomain": domain}))
    return op


def _equal_inputs(rank: int, world_size: int, count: int, tag: int) -> tuple[list[torch.Tensor], torch.Tensor]:
    """x holds (tag, sender, index) per element; equal splits."""
    x = torch.arange(count * world_size, dtype=torch.float64) + 1e6 * rank + 1e9 * tag
    counts = torch.full((world_size,), count, dtype=torch.int64)
    displs = torch.arange(world_size, dtype=torch.int64) * count
    return [x, counts, displs, counts, displs, torch.empty(count * world_size)], x


def _expected(rank: int, world_size: int, count: int, tag: int) -> torch.Tensor:
    base = torch.arange(count * world_size, dtype=torch.float64)[rank * count:(rank + 1) * count]
    parts = [base + 1e6 * j + 1e9 * tag for j in range(world_size)]
    return torch.cat(parts).reshape(1, -1)


def fork_child_is_refused(rank: int, world_size: int) -> dict:
    """Rank 0 warms a communicator, forks; the child uses the inherited operation (must be refused, touching
    nothing), then makes a one-rank operation of its own (must work). Both ranks then keep working."""
    op = _alltoallvv2(rank, world_size, "fork")
    inputs, _ = _equal_inputs(rank, world_size, 5000, 1)
    assert torch.equal(op.execute(inputs)[0], _expected(rank, world_size, 5000, 1))
    report = {}
    if rank == 0:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            os.close(read)
            outcome = {}
            try:
                op.execute(inputs)
                outcome["inherited"] = "no error"
            except RuntimeError as e:
                outcome["inherited"] = str(e)
            try:
                own = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
                own.set_param(json.dumps({"rank": 0, "rankSize": 1, "backend": "shm", "commDomain": "child"}))
                x = torch.arange(4.0)
                one = torch.tensor([4])
                zero = torch.tensor([0])
                outcome["own"] = own.execute([x, one, zero, one, zero, torch.empty(4)])[0].tolist()
            except RuntimeError as e:
                outcome["own"] = str(e)
            os.write(write, json.dumps(outcome).encode())
            os._exit(0)
        os.close(write)
        _, status = os.waitpid(pid, 0)
        with os.fdopen(read) as f:
            report = json.loads(f.read())
        report["child_exit"] = status
    # Parent and peer: the communicator still works, with the right data.
    for tag in (2, 3):
        inputs, _ = _equal_inputs(rank, world_size, 5000, tag)
        assert torch.equal(op.execute(inputs)[0], _expected(rank, world_size, 5000, tag)), f"call {tag}"
    return report


def threads_share_one_communicator(rank: int, world_size: int, rounds: int) -> int:
    """Two threads per rank, each creating its own operation with the same param (one cached communicator,
    created concurrently), call it in rounds of mixed sizes (7, 3000, 70000 elements per peer). Within a
    round both threads call at the same time with the same data, so however the ranks pair their calls, every
    output must be exactly that round's; a per-communicator lock keeps the calls whole. Returns wrong elements."""
    sizes = [7, 3000, 70000]
    barrier = threading.Barrier(2)
    wrong = [0, 0]
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            op = _alltoallvv2(rank, world_size, "threads")
            for k in range(rounds):
                barrier.wait()
                count = sizes[k % len(sizes)]
                inputs, _ = _equal_inputs(rank, world_size, count, k)
                out = op.execute(inputs)[0]
                wrong[t] += int((out != _expected(rank, world_size, count, k)).sum())
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
    return sum(wrong)


def threads_share_one_operation(rank: int, world_size: int, rounds: int) -> dict:
    """Two threads per rank call ONE operation at once, each with its own counts (3 or 5 elements per peer, so
    any cross-rank pairing of different threads' calls fails the count check). Each call must give exactly its
    own layout's data or a clear error; never another call's layout. Returns counts of right, wrong, errors."""
    op = _alltoallvv2(rank, world_size, "shared-op")
    result = {"right": 0, "wrong": 0, "errors": 0, "other": []}
    lock = threading.Lock()
    barrier = threading.Barrier(2)

    def worker(t: int) -> None:
        count = 3 if t == 0 else 5
        for k in range(rounds):
            barrier.wait()
            inputs, _ = _equal_inputs(rank, world_size, count, k)
            try:
                out = op.execute(inputs)[0]
            except RuntimeError as e:
                with lock:
                    if "count mismatch" in str(e) and str(e).startswith("ERROR_INVALID_PARAM"):
                        result["errors"] += 1
                    else:
                        result["other"].append(str(e).splitlines()[0])
                continue
            ok = out.shape == (1, count * world_size) and torch.equal(out, _expected(rank, world_size, count, k))
            with lock:
                result["right" if ok else "wrong"] += 1

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return result


def _over_one_buffer(length: int, offset: int, shared: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """x = the buffer's first `length` elements, out = `length` elements from `offset`: views of one tensor's
    storage, or (`shared`) two storages over one numpy array's memory (torch.from_numpy twice)."""
    if shared:
        memory = np.zeros(length + offset, dtype=np.float64)
        return torch.from_numpy(memory[:length]), torch.from_numpy(memory[offset : offset + length])
    storage = torch.zeros(length + offset, dtype=torch.float64)
    return storage[:length], storage[offset : offset + length]


def aliased_output(rank: int, world_size: int, count: int) -> int:
    """execute_out into x's own memory (the same storage, a view overlapping it, or another storage over the same
    bytes): wrong elements afterwards."""
    op = _alltoallvv2(rank, world_size, "alias")
    wrong = 0
    for offset, shared in ((0, False), (count // 2, False), (0, True), (count // 2 + 3, True)):
        x, out = _over_one_buffer(count * world_size, offset, shared)
        inputs, src = _equal_inputs(rank, world_size, count, offset)
        x.copy_(src)
        out = out.view(1, -1)
        op.execute_out([x, *inputs[1:]], [out])
        wrong += int((out != _expected(rank, world_size, count, offset)).sum())
    return wrong


def gloo_domains_stay_apart(rank: int, world_size: int) -> int:
    """Two gloo operations with different commDomain, interleaved: each receives only its own domain's data."""
    ops = {d: _alltoallvv2(rank, world_size, d, backend="gloo") for d in ("blue", "red")}
    wrong = 0
    for k in range(6):
        for tag, (_, op) in enumerate(ops.items()):
            inputs, _ = _equal_inputs(rank, world_size, 1000 + k, 10 * k + tag)
            wrong += int((op.execute(inputs)[0] != _expected(rank, world_size, 1000 + k, 10 * k + tag)).sum())
    return wrong


def failed_communicator_is_replaced(rank: int, world_size: int, job: str, backend: str) -> dict:
    """A communicator that timed out leaves the cache: the failed operation keeps its error, a new operation
    with the same param gets a fresh communicator. Rank 1 skips one call, so rank 0 times out; rank 1's late call
    is told rank 0 gave up (never carried into the fresh communicator, where it would meet rank 0's next call)."""
    report = {}
    with environment({"ATB_OPS_TIMEOUT": "2"}):  # the pool's value again for the next case
        op = _alltoallvv2(rank, world_size, "evict-" + job, backend)
        inputs, _ = _equal_inputs(rank, world_size, 10, 0)
        op.execute(inputs)  # both: the communicator is up
        if rank == 0:
            try:
                op.execute(inputs)  # rank 1 does not come in time
            except RuntimeError as e:
                report["first"] = str(e)
            try:
                op.execute(inputs)
            except RuntimeError as e:
                report["again"] = str(e)
        else:
            import time

            time.sleep(3)  # past rank 0's timeout: it gave up and told the segment
            try:
                op.execute(inputs)
            except RuntimeError as e:
                report["late"] = str(e)
        # Both ranks make a new operation with the same param: a fresh communicator meets.
        import atb_ops

        before = atb_ops._C.communicator_count()
        fresh = _alltoallvv2(rank, world_size, "evict-" + job, backend)
        later, _ = _equal_inputs(rank, world_size, 10, 1)  # other values than the call rank 0 gave up on
        out = fresh.execute(later)[0]
        report["fresh_ok"] = bool(torch.equal(out, _expected(rank, world_size, 10, 1)))
        report["cached"] = (before, atb_ops._C.communicator_count())
    return report


def distributed_huge_count(rank: int, world_size: int) -> str:
    """atb_ops.distributed with a count of 2**63: the same clear error as the ATB path, not a TypeError."""
    from atb_ops import distributed as ad
    from atb_ops.errors import AtbError

    try:
        ad.all_to_all_v(torch.zeros(4), [2**63, 0], [0, 0], [2, 2], [0, 2])
    except AtbError as e:
        return f"AtbError: {e}"
    except Exception as e:  # noqa: BLE001 - the kind is the finding
        return f"{type(e).__name__}: {e}"
    return "no error"


def distributed_output_over_input(rank: int, world_size: int, count: int) -> int:
    """atb_ops.distributed.alltoall_single with out_tensor = in_tensor (and a view overlapping it), after a
    first call made the group's communicator (so the direct path is the one asked): wrong elements."""
    from atb_ops import distributed as ad

    ad.all_reduce(torch.zeros(1))
    wrong = 0
    for offset, shared in ((0, False), (count // 2, False), (0, True), (count // 2 + 3, True)):
        x, out = _over_one_buffer(count * world_size, offset, shared)
        _, src = _equal_inputs(rank, world_size, count, 2)
        x.copy_(src)
        ad.alltoall_single(out, x)
        wrong += int((out != _expected(rank, world_size, count, 2).reshape(-1)).sum())
    return wrong
