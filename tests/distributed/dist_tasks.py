"""Rank-side functions for the atb_ops.distributed tests (run inside a RankPool's ranks)."""

from __future__ import annotations

import torch
import torch.distributed as dist

from atb_ops import distributed as ad
from tests.support.environment import cpu_path
from tests.support.paths import REPO_ROOT
from tests.support.smaps import mappings_of


def seed_000(rank: int, world_size: int, path: str, counts: str = "tensor"):
    """Paddle's global_scatter example, forward and backward (c = a * a; c.backward()); the counts as int64
    tensors, or as numpy arrays ("numpy")."""
    import numpy as np

    with cpu_path(path):
        x = torch.tensor([[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]], dtype=torch.float32, requires_grad=True)
        make = (lambda v: np.array(v)) if counts == "numpy" else (lambda v: torch.tensor(v, dtype=torch.int64))
        local_count = make([2, 1, 1, 1] if rank == 0 else [1, 1, 2, 1])
        global_count = make([2, 1, 1, 1] if rank == 0 else [1, 1, 2, 1])
        a = ad.global_scatter(x, local_count, global_count)
        c = a * a
        c.backward(torch.ones_like(c))
        back = ad.global_gather(a.detach().contiguous(), local_count, global_count)
        return a.tolist(), x.grad.tolist(), back.tolist()


def seed_002(rank: int, world_size: int, path: str):
    """Paddle's stream.alltoall_single examples, both cases, asynchronous with task.wait()."""
    with cpu_path(path):
        output = torch.empty([2], dtype=torch.int64)
        data = torch.tensor([0, 1] if rank == 0 else [2, 3])
        task = ad.alltoall_single(output, data, sync_op=False)
        task.wait()
        case1 = output.tolist()
        size = dist.get_world_size()
        output2 = torch.empty([(rank + 1) * size, size], dtype=torch.float32)
        data2 = torch.full((3, 2), float(rank))
        out_split_sizes = [rank + 1 for _ in range(size)]
        in_split_sizes = [i + 1 for i in range(size)]
        task = ad.alltoall_single(output2, data2, out_split_sizes, in_split_sizes, sync_op=False)
        assert task.wait()
        return case1, output2.tolist()


def seed_003(rank: int, world_size: int, inputs: torch.Tensor, path: str):
    """DeepSpeed's _AllToAll on 4 ranks: rank r gets row r of every rank's input; backward too."""
    with cpu_path(path):
        x = inputs[rank].clone().requires_grad_(True)
        out = ad.all_to_all(x)
        (out * torch.arange(1.0, 5.0).view(4, 1, 1)).sum().backward()
        return out.detach(), x.grad


def seed_001(rank: int, world_size: int, path: str):
    """MindSpore's AllGather of ones([2, 8]) on 2 ranks, and of distinct values."""
    with cpu_path(path):
        ones = ad.all_gather(torch.ones(2, 8, dtype=torch.float32))
        mine = torch.arange(6, dtype=torch.int16).view(3, 2) + 100 * rank
        return ones, ad.all_gather(mine)


def large_all_gather(rank: int, world_size: int, path: str) -> int:
    """An all_gather of 1 MiB + 6 bytes per rank (gloo moves ones of 1 MiB and more as an all-to-all in which a
    rank's own block does not travel); returns the number of wrong elements."""
    with cpu_path(path):
        n = (1 << 19) + 3
        out = ad.all_gather(torch.arange(n, dtype=torch.int16) + 7 * rank)
        want = torch.cat([torch.arange(n, dtype=torch.int16) + 7 * r for r in range(world_size)])
        return int((out.reshape(-1) != want).sum())


def _advised_bytes(t: torch.Tensor) -> int:
    """The bytes of t in mappings (/proc/self/smaps) whose VmFlags say "hg" (advised onto huge pages; the advice
    covers whole 2 MiB pages, so the partial ones at t's ends stay in mappings of their own)."""
    return sum(span for span, fields in mappings_of(t) if "hg" in fields.get("VmFlags", "").split())


def huge_all_gather_output(rank: int, world_size: int, path: str) -> tuple[int, int, int]:
    """An all_gather into 32 MiB (a fresh mapping glibc makes for it): the wrong elements, the output's bytes and
    how many of them were advised onto huge pages."""
    with cpu_path(path):
        n = (32 << 20) // (4 * world_size)
        out = ad.all_gather(torch.arange(n, dtype=torch.float32) + n * rank)
        wrong = int((out.reshape(-1) != torch.arange(n * world_size, dtype=torch.float32)).sum())
        return wrong, out.nbytes, _advised_bytes(out)


def alltoallv_api(rank: int, world_size: int, x: torch.Tensor, layout, path: str):
    with cpu_path(path):
        return ad.all_to_all_v(x, *[torch.tensor(v, dtype=torch.int64) for v in layout])


def alltoall_single_uneven(
    rank: int, world_size: int, x: torch.Tensor, in_splits, out_splits, out_rows: int, path: str, sync_op: bool
):
    """alltoall_single into a -7-filled output; None splits mean equal splits."""
    with cpu_path(path):
        out = torch.full((out_rows, *x.shape[1:]), -7, dtype=x.dtype)
        ad.alltoall_single(out, x, out_splits, in_splits, sync_op=sync_op).wait()
        return out


def async_then_synchronous_calls(rank: int, world_size: int, iterations: int, path: str):
    """Per iteration: an asynchronous alltoall_single, then torch.distributed's own all_reduce, all_gather,
    all_to_all, all_reduce and the int8 all-reduce on the same group before its wait(), some iterations never waiting
    at all. Returns what each call gave."""
    from atb_ops import quant

    results = []
    with cpu_path(path):
        for it in range(iterations):
            out = torch.full((4 * world_size,), -7.0)
            task = ad.alltoall_single(out, torch.arange(4.0 * world_size) + 1000 * rank + it, sync_op=False)
            # torch's own call on the group (path "group": the group that carries the asynchronous call too).
            torched = torch.full((2,), float(rank + it))
            dist.all_reduce(torched)
            gathered = ad.all_gather(torch.tensor([float(10 * rank + it)]))
            exchanged = ad.all_to_all(torch.arange(2.0 * world_size) + 100 * rank + it)
            summed = ad.all_reduce(torch.tensor([float(rank + it)]))
            codes = quant.quantized_all_reduce(torch.full((16,), rank + 1, dtype=torch.int8),
                                               scale=torch.tensor(0.5), out_dtype=torch.float32)
            if it % 3 != 2:  # the others are left to the next synchronous call
                task.wait()
            # A backward is a synchronous call too: its reduce-scatter runs after the asynchronous call before it.
            leaf = torch.full((2,), float(rank + 1), requires_grad=True)
            total = ad.all_gather(leaf).sum()
            late = torch.full((4 * world_size,), -7.0)
            ad.alltoall_single(late, torch.arange(4.0 * world_size) + 2000 * rank + it, sync_op=False)
            total.backward()
            results.append((out, torched, gathered, exchanged, summed, codes, late, leaf.grad))
        ad.all_gather(torch.zeros(1))  # the last asynchronous call has run once this returns
    return results


def _flag(value: int | None, src: int) -> int:
    t = torch.tensor([0 if value is None else value], dtype=torch.int64)
    dist.broadcast(t, src)
    return int(t.item())


class _AnnounceBackward(torch.autograd.Function):
    """Identity whose backward first tells the passive ranks to run their backward collective."""

    @staticmethod
    def forward(ctx, y, src):
        ctx.src = src
        return y.view_as(y)

    @staticmethod
    def backward(ctx, grad):
        _flag(2, ctx.src)
        return grad, None


def lockstep_gradcheck(f, make_input, rank: int, world_size: int) -> bool:
    """gradcheck of a collective, one active rank at a time.

    gradcheck perturbs its input element by element; if every rank did so at once, each rank's numerical
    Jacobian would also see its peers' perturbations. So one rank at a time runs gradcheck, announcing
    each forward (flag 1) and backward (flag 2); the others replay the same collectives on fixed inputs
    until it announces the end (flag 0).
    """
    ok = True
    for active in range(world_size):
        x = make_input()
        if rank == active:
            try:
                ok &= torch.autograd.gradcheck(
                    lambda t, a=active: _AnnounceBackward.apply(f(t) if _flag(1, a) else None, a), (x,)
                )
            finally:
                _flag(0, active)
        else:
            y = None
            while (flag := _flag(None, active)) != 0:
                if flag == 1:
                    y = f(x)
                else:
                    torch.autograd.grad(y, x, torch.zeros_like(y), retain_graph=True)
    return ok


def gradchecks(rank: int, world_size: int, path: str):
    """torch.autograd.gradcheck in float64 for every differentiable collective (see lockstep_gradcheck)."""
    n = world_size
    g = torch.Generator().manual_seed(100 + rank)

    def inp(*shape):
        return lambda: torch.randn(*shape, dtype=torch.float64, generator=g).requires_grad_(True)

    results = {}
    with cpu_path(path):
        # all_to_all_v with shuffled, gapped, overlapping send regions: rank r sends (j - r) % n + 1 to j.
        send = [(j - rank) % n + 1 for j in range(n)]
        recv = [(rank - j) % n + 1 for j in range(n)]
        sdispls = [2 * j for j in range(n)][::-1]  # reversed order; regions overlap when a count exceeds 2
        x_numel = 2 * (n - 1) + max(send) + 1
        rdispls = [sum(recv[:j]) for j in range(n)]
        results["all_to_all_v"] = lockstep_gradcheck(
            lambda t: ad.all_to_all_v(t, send, sdispls, recv, rdispls), inp(x_numel), rank, n
        )
        # global_scatter / global_gather, 2 experts per rank; global_count is local_count transposed.
        local_of = [[(3 * src + i) % 4 for i in range(2 * n)] for src in range(n)]
        local = local_of[rank]
        glob = [local_of[src][2 * rank + e] for src in range(n) for e in range(2)]
        results["global_scatter"] = lockstep_gradcheck(
            lambda t: ad.global_scatter(t, local, glob), inp(sum(local), 2), rank, n
        )
        results["global_gather"] = lockstep_gradcheck(
            lambda t: ad.global_gather(t, local, glob), inp(sum(glob), 2), rank, n
        )
        results["all_to_all"] = lockstep_gradcheck(ad.all_to_all, inp(2 * n, 2), rank, n)
        results["all_gather"] = lockstep_gradcheck(ad.all_gather, inp(2, 3), rank, n)
        results["all_reduce"] = lockstep_gradcheck(ad.all_reduce, inp(2, 3), rank, n)
        results["reduce_scatter"] = lockstep_gradcheck(ad.reduce_scatter, inp(2 * n, 3), rank, n)
    return results


def opchecks(rank: int, world_size: int):
    """torch.library.opcheck on the collective ops (every rank runs the same checks in lockstep)."""
    from atb_ops._groups import comm_for

    x = torch.randn(6, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(rank))
    comm = comm_for(None, x)
    counts = [12 // world_size] * world_size
    displs = [sum(counts[:j]) for j in range(world_size)]
    out = {}
    out["all_to_all_v"] = torch.library.opcheck(
        torch.ops.atb_ops.all_to_all_v.default, (x, counts, displs, counts, displs, comm)
    )
    out["all_gather"] = torch.library.opcheck(torch.ops.atb_ops.all_gather.default, (x, comm))
    out["all_reduce"] = torch.library.opcheck(torch.ops.atb_ops.all_reduce.default, (x, "sum", comm))
    out["reduce_scatter"] = torch.library.opcheck(torch.ops.atb_ops.reduce_scatter.default, (x, "sum", comm))
    out["broadcast"] = torch.library.opcheck(torch.ops.atb_ops.broadcast.default, (x, 0, comm))
    return {k: {name: str(v) for name, v in res.items()} for k, res in out.items()}


def bad_calls(rank: int, world_size: int):
    """Bad arguments: each must raise AtbError before any communication. Returns the messages."""
    from atb_ops.errors import AtbError

    x = torch.zeros(8)
    # A good call first, so the group's communicator exists and bad calls meet the direct path's checks too.
    ad.all_reduce(torch.zeros(2))
    cases = {
        "short counts": lambda: ad.all_to_all_v(x, [4], [0], [4, 4], [0, 4]),
        "huge count": lambda: ad.all_to_all_v(x, [2**63, 0], [0, 0], [4, 4], [0, 4]),
        "reduce op": lambda: ad.all_reduce(x, op="avg"),
        "reduce_scatter dim0": lambda: ad.reduce_scatter(torch.zeros(3)),
        "broadcast src": lambda: ad.broadcast(x, src=2),
        "broadcast bool src": lambda: ad.broadcast(x, src=True),
        "split count": lambda: ad.alltoall_single(torch.zeros(8), x, [4, 4, 0], [4, 4]),
        "negative count": lambda: ad.all_to_all_v(x, [-1, 4], [0, 4], [4, 4], [0, 4]),
        "float counts": lambda: ad.all_to_all_v(x, torch.tensor([4.0, 4.0]), [0, 4], [4, 4], [0, 4]),
        "send past x": lambda: ad.all_to_all_v(x, [4, 4], [0, 6], [4, 4], [0, 4]),
        "non-contiguous": lambda: ad.all_to_all_v(torch.zeros(4, 4).t(), [8, 8], [0, 8], [8, 8], [0, 8]),
        "split sum": lambda: ad.alltoall_single(torch.zeros(8), x, [4, 4], [3, 4]),
        "dtype mismatch": lambda: ad.alltoall_single(torch.zeros(8, dtype=torch.int32), x),
        "indivisible": lambda: ad.alltoall_single(torch.zeros(9), torch.zeros(9)),
        "scatter rows": lambda: ad.global_scatter(torch.zeros(5, 2), [1, 1, 1, 1], [1, 1, 1, 1]),
        "bool counts": lambda: ad.all_to_all_v(x, [True, 4], [0, 4], [4, 4], [0, 4]),
        "bool expert counts": lambda: ad.global_scatter(torch.zeros(4, 2), [True, 1, 1, 1], [1, 1, 1, 1]),
        "huge expert count": lambda: ad.global_scatter(torch.zeros(4, 2), [1, 1, 1, 1], [2**62, 1, 1, 1]),
        "bool split sizes": lambda: ad.alltoall_single(torch.zeros(8), x, [4, 4], [True, 7]),
        "count lengths": lambda: ad.global_scatter(torch.zeros(3, 2), [1, 1, 1], [1, 1, 1]),
        "all_to_all dim0": lambda: ad.all_to_all(torch.zeros(3, 2)),
        "all_gather scalar": lambda: ad.all_gather(torch.tensor(1.0)),
    }
    messages = {}
    for name, call in cases.items():
        try:
            call()
        except AtbError as e:
            assert isinstance(e, RuntimeError) and isinstance(e, ValueError)
            messages[name] = str(e)
        else:
            messages[name] = "NO ERROR"
    return messages


def group_subset(rank: int, world_size: int):
    """A new_group of ranks {0, 2} of 3: collectives on it leave rank 1 alone; rank 1 calling one anyway gets an
    error naming the group argument (returned as its text), before anything communicates."""
    sub = dist.new_group([0, 2])
    if rank == 1:
        try:
            ad.all_gather(torch.ones(2), group=sub)
        except ValueError as e:
            return str(e)
        return "no error"
    x = torch.tensor([float(rank)] * 4)
    with cpu_path("shm"):
        a = ad.all_to_all(x, group=sub)
    with cpu_path("group"):
        b = ad.all_gather(x.view(2, 2), group=sub)
    return a, b


def _moe_module():
    import importlib.util

    path = REPO_ROOT / "scripts" / "moe_demo.py"
    spec = importlib.util.spec_from_file_location("moe_demo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def moe_compiled_vs_eager(rank: int, world_size: int, backend: str):
    """The MoE layer eager and under torch.compile: same output and same gradients."""
    moe = _moe_module()
    full = moe.init_params(world_size, 2)
    mine = slice(rank * 2, (rank + 1) * 2)
    x, _ = moe.batch(rank, 0)

    def run(fn):
        params = [
            full["router"].clone().requires_grad_(True),
            full["w1"][mine].clone().requires_grad_(True),
            full["w2"][mine].clone().requires_grad_(True),
        ]
        y = fn(x, *params)
        (y**2).sum().backward()
        return y.detach(), [p.grad for p in params]

    torch._dynamo.reset()
    eager = run(moe.moe_forward)
    compiled = run(torch.compile(moe.moe_forward, backend=backend))
    return eager, compiled


def direct_and_dispatcher_paths_agree(rank: int, world_size: int) -> dict:
    """Each collective without autograd (the direct path) and with its input requiring grad (the dispatcher
    and autograd), on tests/distributed/dist_golden.py's inputs. Returns {name: (direct output, dispatcher output,
    whether the dispatcher's output requires grad)}; alltoall_single's entry also says it wrote in place."""
    from tests.distributed import dist_golden

    ins = dist_golden.inputs(rank, world_size)
    x, local, global_ = ins["x"], ins["local"], ins["global"]
    n = world_size
    calls = {
        "all_reduce": (x, lambda t: ad.all_reduce(t, "sum")),
        "reduce_scatter": (x, lambda t: ad.reduce_scatter(t)),
        "all_gather": (x, lambda t: ad.all_gather(t)),
        "broadcast": (x, lambda t: ad.broadcast(t, src=n - 1)),
        "all_to_all": (x, lambda t: ad.all_to_all(t)),
        "all_to_all_v": (x, lambda t: ad.all_to_all_v(t, [2] * n, [0] * n, [2] * n, [2 * r for r in range(n)])),
        "global_scatter": (ins["rows"], lambda t: ad.global_scatter(t, local, global_)),
        "global_gather": (ins["expert_rows"], lambda t: ad.global_gather(t, local, global_)),
    }
    result = {}
    for name, (t, call) in calls.items():
        fast = call(t)
        slow = call(t.clone().requires_grad_())
        result[name] = (fast, slow.detach(), slow.requires_grad)
    out = torch.full((2 * n, 3), -1.0, dtype=torch.float64)
    ptr, version = out.data_ptr(), out._version
    ad.alltoall_single(out, x)
    slow = torch.empty_like(out)
    ad.alltoall_single(slow, x.clone().requires_grad_())
    result["alltoall_single"] = (out, slow, out.data_ptr() == ptr and out._version > version)
    return result



def mixed_paths(rank: int, world_size: int, how: str) -> dict:
    """Every framework collective with rank 0 on the direct path and the other ranks on the dispatcher path
    (forced by `how`: an input requiring grad, an open profiler, or a TorchDispatchMode). Returns each
    output; the paths must make the same calls (issue 29), so the values match tests/distributed/dist_golden.py."""
    import contextlib

    from torch.utils._python_dispatch import TorchDispatchMode

    from tests.distributed import dist_golden

    class PassThrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    ins = dist_golden.inputs(rank, world_size)
    n = world_size
    slow = rank != 0
    grad = slow and how == "requires_grad"

    def arg(t: torch.Tensor) -> torch.Tensor:
        return t.clone().requires_grad_() if grad else t

    if not slow or how == "requires_grad":
        context = contextlib.nullcontext()
    elif how == "profiler":
        context = torch.profiler.profile()
    else:
        context = PassThrough()
    x, local, global_ = ins["x"], ins["local"], ins["global"]
    results = {}
    with context:
        results["all_reduce"] = ad.all_reduce(arg(x), "sum")
        results["reduce_scatter"] = ad.reduce_scatter(arg(x))
        results["all_gather"] = ad.all_gather(arg(x))
        results["broadcast"] = ad.broadcast(arg(x), src=n - 1)
        results["all_to_all"] = ad.all_to_all(arg(x))
        results["all_to_all_v"] = ad.all_to_all_v(arg(x), [2] * n, [0] * n, [2] * n, [2 * r for r in range(n)])
        results["global_scatter"] = ad.global_scatter(arg(ins["rows"]), local, global_)
        results["global_gather"] = ad.global_gather(arg(ins["expert_rows"]), local, global_)
        out = torch.full((2 * n, 3), -1.0, dtype=torch.float64)
        ad.alltoall_single(out, arg(x))
        results["alltoall_single"] = out
    return {k: v.detach() for k, v in results.items()}
