"""Rank-side functions for the torch.distributed backend "atb_ops" (run inside a RankPool's ranks).

Every rank knows every rank's input (made from the rank number alone), so each rank computes its own golden
with plain torch and asserts on its own result; outputs are pre-filled with a sentinel so an element nobody
wrote is caught. Values are small integers, so float32 and bfloat16 sums are exact in any order.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from atb_ops import _C

SENTINEL = -7
DTYPES = (torch.float32, torch.bfloat16, torch.int64)
_groups: dict[int, dist.ProcessGroup] = {}


def group(world_size: int) -> dist.ProcessGroup:
    """This pool's "atb_ops" group over every rank (made once per pool: new_group is a collective)."""
    g = _groups.get(world_size)
    if g is None:
        g = dist.new_group(list(range(world_size)), backend="atb_ops")
        _groups[world_size] = g
    return g


def backend_of(g: dist.ProcessGroup) -> object:
    """The C10dBackend object torch holds for the group's CPU tensors."""
    return g._get_backend(torch.device("cpu"))


def data(rank: int, shape: tuple[int, ...], dtype: torch.dtype, salt: int = 0) -> torch.Tensor:
    """Rank `rank`'s input: small distinct integers (exact in every dtype tested, never 0 for prod)."""
    n = 1
    for s in shape:
        n *= s
    values = (torch.arange(n) * 3 + rank * 5 + salt) % 7 + 1
    return values.reshape(shape).to(dtype)


def _check(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert torch.equal(got, want), f"{what}: got {got.flatten()[:16].tolist()} want {want.flatten()[:16].tolist()}"


def _golden_reduce(tensors: list[torch.Tensor], op: str) -> torch.Tensor:
    """Plain torch: the reduction over ranks in float64 (exact for these values), in the tensors' dtype."""
    stack = torch.stack([t.double() for t in tensors])
    out = {"sum": stack.sum(0), "prod": stack.prod(0), "min": stack.amin(0), "max": stack.amax(0),
           "avg": stack.mean(0)}[op]
    return out.to(tensors[0].dtype)


OPS = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
       "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.AVG}


def all_reduce(rank: int, world_size: int) -> int:
    """all_reduce: every op x dtype (AVG: floating dtypes), plus a non-contiguous tensor; returns cases run."""
    g, cases = group(world_size), 0
    for dtype in DTYPES:
        for name, op in OPS.items():
            if name == "avg" and not dtype.is_floating_point:
                continue
            x = data(rank, (3, 5), dtype)
            dist.all_reduce(x, op=op, group=g)
            _check(x, _golden_reduce([data(r, (3, 5), dtype) for r in range(world_size)], name), f"{name} {dtype}")
            cases += 1
    t = data(rank, (4, 6), torch.float32).t()  # strided: reduced through a contiguous copy, written back
    dist.all_reduce(t, group=g)
    _check(t, _golden_reduce([data(r, (4, 6), torch.float32).t() for r in range(world_size)], "sum"), "strided")
    return cases + 1


def gathers(rank: int, world_size: int) -> int:
    """all_gather (list) and all_gather_into_tensor (concatenated and stacked) per dtype."""
    g = group(world_size)
    for dtype in DTYPES:
        x = data(rank, (2, 3), dtype)
        want = [data(r, (2, 3), dtype) for r in range(world_size)]
        outs = [torch.full((2, 3), SENTINEL, dtype=dtype) for _ in range(world_size)]
        dist.all_gather(outs, x, group=g)
        for r in range(world_size):
            _check(outs[r], want[r], f"all_gather[{r}] {dtype}")
        flat = torch.full((2 * world_size, 3), SENTINEL, dtype=dtype)
        dist.all_gather_into_tensor(flat, x, group=g)
        _check(flat, torch.cat(want), f"all_gather_into_tensor {dtype}")
        stacked = torch.full((world_size, 2, 3), SENTINEL, dtype=dtype)
        dist.all_gather_into_tensor(stacked, x, group=g)
        _check(stacked, torch.stack(want), f"all_gather_into_tensor stacked {dtype}")
        # In place, as FSDP does: the input is this rank's chunk of the output.
        inplace = torch.full((world_size * 4,), SENTINEL, dtype=dtype)
        inplace.narrow(0, rank * 4, 4).copy_(data(rank, (4,), dtype))
        dist.all_gather_into_tensor(inplace, inplace.narrow(0, rank * 4, 4), group=g)
        _check(inplace, torch.cat([data(r, (4,), dtype) for r in range(world_size)]), f"in place {dtype}")
    return len(DTYPES)


def reduce_scatters(rank: int, world_size: int) -> int:
    """reduce_scatter (list) and reduce_scatter_tensor per dtype and op."""
    g, cases = group(world_size), 0
    for dtype in DTYPES:
        for name in ("sum", "max", "avg"):
            if name == "avg" and not dtype.is_floating_point:
                continue
            parts = [data(rank, (2, 3), dtype, salt=j) for j in range(world_size)]
            want = _golden_reduce([data(r, (2, 3), dtype, salt=rank) for r in range(world_size)], name)
            out = torch.full((2, 3), SENTINEL, dtype=dtype)
            dist.reduce_scatter(out, parts, op=OPS[name], group=g)
            _check(out, want, f"reduce_scatter {name} {dtype}")
            out2 = torch.full((2, 3), SENTINEL, dtype=dtype)
            dist.reduce_scatter_tensor(out2, torch.cat(parts), op=OPS[name], group=g)
            _check(out2, want, f"reduce_scatter_tensor {name} {dtype}")
            cases += 1
    return cases


def broadcasts(rank: int, world_size: int) -> int:
    """broadcast from every root, per dtype."""
    g = group(world_size)
    for dtype in DTYPES:
        for src in range(world_size):
            x = data(rank, (5,), dtype) if rank == src else torch.full((5,), SENTINEL, dtype=dtype)
            dist.broadcast(x, src=src, group=g)
            _check(x, data(src, (5,), dtype), f"broadcast src {src} {dtype}")
    return len(DTYPES) * world_size


def _splits(world_size: int) -> list[list[int]]:
    """rows[s][d]: rows rank s sends rank d (some zero)."""
    return [[(s + 2 * d) % 3 for d in range(world_size)] for s in range(world_size)]


def alltoalls(rank: int, world_size: int) -> int:
    """all_to_all_single with and without split sizes, and all_to_all (lists), per dtype."""
    g = group(world_size)
    rows = _splits(world_size)
    for dtype in DTYPES:
        # Equal splits: block d of rank s's input lands in block s of rank d's output.
        x = data(rank, (2 * world_size, 3), dtype)
        out = torch.full_like(x, SENTINEL)
        dist.all_to_all_single(out, x, group=g)
        want = torch.cat([data(s, (2 * world_size, 3), dtype)[2 * rank:2 * rank + 2] for s in range(world_size)])
        _check(out, want, f"all_to_all_single {dtype}")
        # Split sizes (rows, some 0).
        send = rows[rank]
        recv = [rows[s][rank] for s in range(world_size)]
        x = data(rank, (sum(send), 2), dtype, salt=1)
        out = torch.full((sum(recv), 2), SENTINEL, dtype=dtype)
        dist.all_to_all_single(out, x, output_split_sizes=recv, input_split_sizes=send, group=g)
        pieces = []
        for s in range(world_size):
            src = data(s, (sum(rows[s]), 2), dtype, salt=1)
            start = sum(rows[s][:rank])
            pieces.append(src[start:start + rows[s][rank]])
        _check(out, torch.cat(pieces), f"all_to_all_single splits {dtype}")
        # Lists: tensor j of rank s (shape by (s, j)) goes to rank j.
        ins = [data(rank, (rows[rank][j] + 1, 2), dtype, salt=j) for j in range(world_size)]
        outs = [torch.full((rows[s][rank] + 1, 2), SENTINEL, dtype=dtype) for s in range(world_size)]
        dist.all_to_all(outs, ins, group=g)
        for s in range(world_size):
            _check(outs[s], data(s, (rows[s][rank] + 1, 2), dtype, salt=rank), f"all_to_all[{s}] {dtype}")
    return len(DTYPES)


def point_to_point(rank: int, world_size: int) -> int:
    """send/recv around the ring (even ranks send first), batch_isend_irecv both ways, barrier."""
    g = group(world_size)
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    got = torch.full((4,), SENTINEL, dtype=torch.float32)
    mine = data(rank, (4,), torch.float32)
    if rank % 2 == 0:
        dist.send(mine, dst=right, group=g)
        dist.recv(got, src=left, group=g)
    else:
        dist.recv(got, src=left, group=g)
        dist.send(mine, dst=right, group=g)
    _check(got, data(left, (4,), torch.float32), "send/recv")
    # Every rank sends first: only a batch (one group of transfers) can do this.
    a = torch.full((3,), SENTINEL, dtype=torch.int64)
    b = torch.full((3,), SENTINEL, dtype=torch.int64)
    ops = [dist.P2POp(dist.isend, data(rank, (3,), torch.int64), right, group=g),
           dist.P2POp(dist.isend, data(rank, (3,), torch.int64, salt=1), left, group=g),
           dist.P2POp(dist.irecv, a, left, group=g),
           dist.P2POp(dist.irecv, b, right, group=g)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    _check(a, data(left, (3,), torch.int64), "batch_isend_irecv from left")
    _check(b, data(right, (3,), torch.int64, salt=1), "batch_isend_irecv from right")
    dist.barrier(group=g)
    return 3


def tagged_point_to_point(rank: int, world_size: int) -> list[str]:
    """Tags in the same order on both ranks move the data; a receive that names the later send's tag first is refused
    on both ranks (sends and receives meet in call order: silently delivering the first send there was wrong data),
    and the group works afterwards."""
    g = group(world_size)
    if rank == 0:
        for tag in (5, 7):
            dist.send(data(0, (3,), torch.float32, salt=tag), dst=1, group=g, tag=tag)
    elif rank == 1:
        for tag in (5, 7):
            got = torch.full((3,), SENTINEL, dtype=torch.float32)
            dist.recv(got, src=0, group=g, tag=tag)
            _check(got, data(0, (3,), torch.float32, salt=tag), f"recv tag {tag}")
    errors = []
    for sent, taken in ((1, 2), (2, 1)):  # rank 0 sends tag 1 then 2; rank 1 receives tag 2 first
        buf = data(0, (3,), torch.float32, salt=sent) if rank == 0 else torch.full((3,), SENTINEL, dtype=torch.float32)
        try:
            if rank == 0:
                dist.send(buf, dst=1, group=g, tag=sent)
            elif rank == 1:
                dist.recv(buf, src=0, group=g, tag=taken)
        except RuntimeError as e:
            errors.append(str(e).splitlines()[0])
        if rank == 1:
            _check(buf, torch.full((3,), SENTINEL, dtype=torch.float32), "a refused receive")
    z = torch.ones(3)
    dist.all_reduce(z, group=g)
    _check(z, torch.full((3,), float(world_size)), "after the refused receives")
    return errors


def async_ops(rank: int, world_size: int) -> list[bool]:
    """async_op=True: a Work whose wait() returns True and whose future holds the result."""
    g = group(world_size)
    x = data(rank, (8,), torch.float32)
    work = dist.all_reduce(x, group=g, async_op=True)
    done = work.wait()
    fut = work.get_future().wait()
    _check(x, _golden_reduce([data(r, (8,), torch.float32) for r in range(world_size)], "sum"), "async all_reduce")
    _check(fut[0], x, "future value")
    out = torch.full((world_size * 2,), SENTINEL, dtype=torch.float32)
    w2 = dist.all_gather_into_tensor(out, data(rank, (2,), torch.float32), group=g, async_op=True)
    w2.wait()
    _check(out, torch.cat([data(r, (2,), torch.float32) for r in range(world_size)]), "async all_gather")
    return [done, work.is_completed(), work.is_success()]


def mismatch(rank: int, world_size: int) -> list[str]:
    """Ranks pass different sizes / dtypes: every rank raises (no hang, no wrong data), then the group works."""
    g = group(world_size)
    errors = []
    x = torch.ones(4 + (rank == 0), dtype=torch.float32)  # rank 0 has 5 elements, the others 4
    try:
        dist.all_reduce(x, group=g)
    except RuntimeError as e:
        errors.append(str(e))
    y = torch.ones(4, dtype=torch.float32 if rank else torch.float64)
    try:
        dist.broadcast(y, src=0, group=g)
    except RuntimeError as e:
        errors.append(str(e))
    # A local argument error: raised before any communication, naming the argument.
    try:
        dist.all_to_all_single(torch.empty(3), torch.empty(3), input_split_sizes=[1] * (world_size + 1), group=g)
    except (RuntimeError, ValueError) as e:
        errors.append(str(e))
    # Reductions this backend refuses, locally on every rank (nothing was sent, so nothing is left pending).
    for op, t in ((dist.ReduceOp.AVG, torch.ones(2, dtype=torch.int64)), (dist.ReduceOp.BAND, torch.ones(2))):
        try:
            dist.all_reduce(t, op=op, group=g)
        except (RuntimeError, ValueError) as e:
            errors.append(str(e))
    # AVG on the last rank, SUM on the others: AVG moves a sum too, and must still be told apart (each rank would
    # keep a result of its own).
    avg = dist.ReduceOp.AVG if rank == world_size - 1 else dist.ReduceOp.SUM
    t = torch.full((4,), float(rank + 1))
    try:
        dist.all_reduce(t, op=avg, group=g)
        errors.append(f"no error: {t.tolist()}")
    except RuntimeError as e:
        errors.append(str(e))
    shard = torch.full((2,), -1.0)
    try:
        dist.reduce_scatter_tensor(shard, torch.ones(2 * world_size), op=avg, group=g)
        errors.append(f"no error: {shard.tolist()}")
    except RuntimeError as e:
        errors.append(str(e))
    z = torch.ones(3)
    dist.all_reduce(z, group=g)  # still usable
    _check(z, torch.full((3,), float(world_size)), "after mismatch")
    return errors


def objects(rank: int, world_size: int) -> list:
    """broadcast_object_list and all_gather_object through the group."""
    g = group(world_size)
    objs = [{"rank": rank, "text": "x" * (rank + 1)}, (rank, [1, 2])] if rank == 1 else [None, None]
    dist.broadcast_object_list(objs, src=1, group=g)
    gathered: list = [None] * world_size
    dist.all_gather_object(gathered, {"r": rank, "sq": rank * rank}, group=g)
    return [objs, gathered]


def shm_route(rank: int, world_size: int) -> dict:
    """The group's collectives really ran on atb_ops' shm communicator (its counters move)."""
    g = group(world_size)
    backend = backend_of(g)
    stats = _C.communicator_stats(backend.comm_domain)
    before = sum(s["collectives"] for s in stats)
    dist.all_reduce(torch.ones(16), group=g)
    after = sum(s["collectives"] for s in _C.communicator_stats(backend.comm_domain))
    return {"type": type(backend).__name__, "comm_backend": backend.comm_backend, "counted": after - before,
            "name": g._get_backend_name()}


def _model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))


def _batch(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1000 + rank)  # the same batch every step: the loss must fall
    return torch.randn(6, 8, generator=gen), torch.randn(6, 4, generator=gen)


def ddp_train(rank: int, world_size: int, backend: str, steps: int = 4) -> tuple[list[float], list, int]:
    """A tiny MLP trained with DDP over `backend` ("atb_ops": this pool's group; "gloo": the default group).

    Returns:
        The loss of each step, the final parameters, and the collectives atb_ops ran during training.
    """
    g = group(world_size) if backend == "atb_ops" else dist.group.WORLD
    model = torch.nn.parallel.DistributedDataParallel(_model(0), process_group=g)
    losses, ran = _train(model, g, rank, steps)
    return losses, [p.detach().clone() for p in model.parameters()], ran


def _train(model: torch.nn.Module, g: dist.ProcessGroup, rank: int, steps: int) -> tuple[list[float], int]:
    """`steps` SGD steps on this rank's batches; the losses, and the collectives atb_ops ran meanwhile."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    before = _collectives(g)
    for step in range(steps):
        x, y = _batch(rank, step)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, _collectives(g) - before


def _collectives(g: dist.ProcessGroup) -> int:
    """Collectives atb_ops' communicator of the group ran so far (0 for a gloo group)."""
    backend = backend_of(g)
    if not hasattr(backend, "comm_domain"):
        return 0
    return sum(s["collectives"] for s in _C.communicator_stats(backend.comm_domain))


def fsdp_train(rank: int, world_size: int, backend: str, steps: int = 4) -> tuple[list[float], list, int]:
    """The same MLP with FSDP2 (torch.distributed.fsdp.fully_shard) on a CPU DeviceMesh over `backend`'s group.

    Returns:
        The loss of each step, the final full (unsharded) parameters, and the collectives atb_ops ran.
    """
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard

    g = group(world_size) if backend == "atb_ops" else dist.group.WORLD
    mesh = DeviceMesh.from_group(g, "cpu")
    model = _model(0)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    losses, ran = _train(model, g, rank, steps)
    return losses, [p.full_tensor().detach().clone() for p in model.parameters()], ran
