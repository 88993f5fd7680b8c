"""Framework-style collectives over torch.distributed groups: Paddle, DeepSpeed and MindSpore shapes.

Every function validates its arguments (through the same native layout check the ATB surface uses)
before any communication and raises AtbError, a RuntimeError and ValueError, naming the argument and
values. CPU tensors run on the node-local shared-memory path when the whole group is on this host,
otherwise on the group's own backend (see atb_ops._groups, ATB_OPS_CPU_PATH).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import torch
import torch.distributed as dist

from atb_ops import _C, _ops
from atb_ops._groups import comm_for, group_size, known_comm, resolve_group
from atb_ops.errors import AtbError

__all__ = [
    "Task",
    "all_gather",
    "all_reduce",
    "all_to_all",
    "all_to_all_v",
    "alltoall_single",
    "broadcast",
    "global_gather",
    "global_scatter",
    "reduce_scatter",
]

REDUCE_OPS = ("sum", "prod", "max", "min")

Counts = Sequence[int] | torch.Tensor

_INT64_MAX = 2**63 - 1
_INTEGER_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def _direct(*tensors: torch.Tensor) -> bool:
    """Whether a call may skip the dispatcher (atb_ops._C.direct_*): plain tensors, no autograd to record, no
    tracing (torch.compile, dispatch modes), no profiler to show the op to."""
    if (torch._C._len_torch_dispatch_stack() or torch._C._is_torch_function_mode_enabled()
            or torch.autograd._profiler_enabled() or torch.compiler.is_compiling()):
        return False
    grad = torch.is_grad_enabled()
    for t in tensors:
        if type(t) is not torch.Tensor or (grad and t.requires_grad):
            return False
    return True


_SEQUENCES = (list, tuple)
_NOT_DIRECT = object()


def _try_direct(fn, group: dist.ProcessGroup | None, x: torch.Tensor, *args):
    """fn(*args, comm) through atb_ops._C.direct_*, or _NOT_DIRECT when the group has no communicator yet
    (its first call is a collective, made after the checks) or a precondition failed before any
    communication (the caller's checks then name it)."""
    comm = known_comm(group, x)
    if comm is None:
        return _NOT_DIRECT
    try:
        return fn(*args, comm)
    except (TypeError, ValueError):
        return _NOT_DIRECT


def _as_counts(name: str, value: Counts, length: int | None = None) -> list[int]:
    """A list of ints from a list or an integer tensor (host or device), checked for length and sign."""
    if isinstance(value, torch.Tensor):
        if value.dtype not in _INTEGER_DTYPES:
            raise AtbError(f"{name} must be an integer tensor (int64), got dtype {value.dtype}")
        if value.dim() != 1:
            raise AtbError(f"{name} must be 1-D, got shape {list(value.shape)}")
        values = value.tolist()
    else:
        try:
            values = list(value)
        except TypeError:
            raise AtbError(f"{name} must be a list of ints or an int64 tensor, got {type(value).__name__}") from None
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise AtbError(f"{name} must hold ints only, got {values}")
    if length is not None and len(values) != length:
        raise AtbError(f"{name} has {len(values)} entries, expected {length}: {values}")
    if any(v < 0 for v in values):
        raise AtbError(f"{name} must be >= 0, got {values}")
    too_big = [(i, v) for i, v in enumerate(values) if v > _INT64_MAX]
    if too_big:
        i, v = too_big[0]
        raise AtbError(f"{name}[{i}] = {v} does not fit int64 (max {_INT64_MAX})")
    return values


def _validate(send_counts, sdispls, recv_counts, rdispls, world_size: int, send_numel: int, capacity: int) -> int:
    try:
        return _C.validate_layout(send_counts, sdispls, recv_counts, rdispls, world_size, send_numel, capacity)
    except RuntimeError as e:
        raise AtbError(str(e)) from None


def _check_tensor(name: str, x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor):
        raise AtbError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_contiguous():
        raise AtbError(f"{name} must be contiguous, got shape {list(x.shape)} strides {list(x.stride())}")


def _row_numel(x: torch.Tensor) -> int:
    return math.prod(x.shape[1:])


def all_to_all_v(
    x: torch.Tensor,
    send_counts: Counts,
    sdispls: Counts,
    recv_counts: Counts,
    rdispls: Counts,
    group: dist.ProcessGroup | None = None,
) -> torch.Tensor:
    """ATB's AllToAllVV2 over a group: counts and displacements in elements of x flattened.

    Args:
        x: Contiguous input of any shape and a supported dtype.
        send_counts: [world_size] elements this rank sends to rank i.
        sdispls: [world_size] offset in x of what goes to rank i (regions may overlap).
        recv_counts: [world_size] elements this rank receives from rank i.
        rdispls: [world_size] offset in the output of what comes from rank i (regions must not overlap).
        group: A torch.distributed ProcessGroup; None for the default group.

    Returns:
        A 1-D tensor of sum(recv_counts) elements, dtype and device of x. Differentiable: the gradient
        travels back along the transposed layout.

    Raises:
        AtbError: On bad arguments, before any communication.
    """
    if _direct(x) and type(send_counts) in _SEQUENCES and type(sdispls) in _SEQUENCES \
            and type(recv_counts) in _SEQUENCES and type(rdispls) in _SEQUENCES:
        y = _try_direct(_C.direct_all_to_all_v, group, x, x, send_counts, sdispls, recv_counts, rdispls)
        if y is not _NOT_DIRECT:
            return y
    _check_tensor("x", x)
    n = group_size(group)
    layout = [
        _as_counts(name, v, n)
        for name, v in (
            ("send_counts", send_counts),
            ("sdispls", sdispls),
            ("recv_counts", recv_counts),
            ("rdispls", rdispls),
        )
    ]
    _validate(*layout, n, x.numel(), -1)
    return torch.ops.atb_ops.all_to_all_v(x, *layout, comm_for(group, x))


class Task:
    """Handle of an alltoall_single (Paddle's task): wait() blocks until the output is written."""

    def __init__(self, future: Future | None = None):
        self._future = future

    def wait(self, timeout: float | None = None) -> bool:
        """Block until done; re-raises the collective's error. Returns True."""
        if self._future is not None:
            self._future.result(timeout)
        return True

    def is_completed(self) -> bool:
        return self._future is None or self._future.done()


_DONE = Task()  # what a synchronous call returns
_executors: dict[str, ThreadPoolExecutor] = {}
_last: dict[str, Future] = {}
_order_lock = threading.Lock()


def _ordered(group_name: str, fn, sync_op: bool) -> Task:
    """Collectives on one group run in call order: async ones on the group's worker thread, a sync one
    after every earlier async one has finished."""
    with _order_lock:
        if not sync_op:
            executor = _executors.get(group_name)
            if executor is None:
                executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"atb_ops-{group_name}")
                _executors[group_name] = executor
            future = executor.submit(fn)
            _last[group_name] = future
            return Task(future)
        previous = _last.pop(group_name, None)
    if previous is not None:
        previous.exception()  # its error belongs to its own Task.wait()
    fn()
    return Task()


def alltoall_single(
    out_tensor: torch.Tensor,
    in_tensor: torch.Tensor,
    out_split_sizes: Counts | None = None,
    in_split_sizes: Counts | None = None,
    group: dist.ProcessGroup | None = None,
    sync_op: bool = True,
) -> Task:
    """Paddle's stream.alltoall_single: uneven splits of dim 0 (rows) into a given output.

    Args:
        out_tensor: Output; its rows are split by out_split_sizes (equal splits when None).
        in_tensor: Contiguous input; its rows are split by in_split_sizes (equal splits when None).
        out_split_sizes: Rows received from each rank.
        in_split_sizes: Rows sent to each rank.
        group: A torch.distributed ProcessGroup; None for the default group.
        sync_op: False returns at once; the returned Task's wait() blocks until out_tensor is written.

    Returns:
        A Task; wait() re-raises the collective's error.

    Raises:
        AtbError: On bad arguments, before any communication.
    """
    if sync_op and not _last and _direct(in_tensor, out_tensor) and not out_tensor.requires_grad \
            and (out_split_sizes is None or type(out_split_sizes) in _SEQUENCES) \
            and (in_split_sizes is None or type(in_split_sizes) in _SEQUENCES):
        done = _try_direct(_C.direct_alltoall_single, group, in_tensor, out_tensor, in_tensor, out_split_sizes,
                           in_split_sizes)
        if done is not _NOT_DIRECT:
            return _DONE
    _check_tensor("in_tensor", in_tensor)
    if not isinstance(out_tensor, torch.Tensor):
        raise AtbError(f"out_tensor must be a torch.Tensor, got {type(out_tensor).__name__}")
    if out_tensor.dtype != in_tensor.dtype:
        raise AtbError(f"out_tensor dtype {out_tensor.dtype} differs from in_tensor dtype {in_tensor.dtype}")
    if out_tensor.device != in_tensor.device:
        raise AtbError(f"out_tensor is on {out_tensor.device} but in_tensor on {in_tensor.device}")
    if in_tensor.dim() == 0 or out_tensor.dim() == 0:
        raise AtbError("alltoall_single splits dim 0: in_tensor and out_tensor need at least 1 dimension")
    if in_tensor.shape[1:] != out_tensor.shape[1:]:
        raise AtbError(
            f"in_tensor rows {list(in_tensor.shape[1:])} and out_tensor rows "
            f"{list(out_tensor.shape[1:])} differ in shape"
        )
    n = group_size(group)
    sizes = []
    for name, splits, t in (
        ("in_split_sizes", in_split_sizes, in_tensor),
        ("out_split_sizes", out_split_sizes, out_tensor),
    ):
        if splits is None:
            if t.shape[0] % n:
                raise AtbError(f"{name} is None, so dim 0 of size {t.shape[0]} must divide by the group size {n}")
            splits = [t.shape[0] // n] * n
        rows = _as_counts(name, splits, n)
        if sum(rows) != t.shape[0]:
            raise AtbError(f"sum({name})={sum(rows)} but dim 0 has {t.shape[0]} rows: {rows}")
        sizes.append(rows)
    row = _row_numel(in_tensor)
    send = [r * row for r in sizes[0]]
    recv = [r * row for r in sizes[1]]
    sd, rd = _ops.packed(send), _ops.packed(recv)
    _validate(send, sd, recv, rd, n, in_tensor.numel(), out_tensor.numel())
    comm = comm_for(group, in_tensor)

    def run() -> None:
        result = torch.ops.atb_ops.all_to_all_v(in_tensor, send, sd, recv, rd, comm)
        with torch.no_grad():
            out_tensor.copy_(result.view(out_tensor.shape))

    return _ordered(resolve_group(group).group_name, run, sync_op)


def _expert_counts(x_rows: int, local_count: Counts, global_count: Counts, group, scatter: bool):
    n = group_size(group)
    local = _as_counts("local_count", local_count)
    global_ = _as_counts("global_count", global_count)
    if len(local) != len(global_) or len(local) == 0 or len(local) % n:
        raise AtbError(
            f"local_count ({len(local)} entries) and global_count ({len(global_)} entries) must both "
            f"have n_expert * world_size entries, world_size={n}"
        )
    n_expert = len(local) // n
    expected_rows = sum(local) if scatter else sum(global_)
    if x_rows != expected_rows:
        which = "local_count" if scatter else "global_count"
        raise AtbError(f"x has {x_rows} rows but sum({which})={expected_rows}")
    return n, n_expert, local, global_


def _regroup(y: torch.Tensor, counts: list[int], n: int, n_expert: int, from_expert_major: bool) -> torch.Tensor:
    """Regroups the row blocks (rank r, expert e), block sizes counts[r * n_expert + e], between rank-major
    packing (what an alltoallv moves) and expert-major packing (what experts consume).

    One copy of the rows, block by block (n * n_expert slices, not one index per row); y itself when the
    two packings coincide (one expert per rank, or one rank).
    """
    if n_expert == 1 or n == 1:
        return y
    rank_major = [(r, e) for r in range(n) for e in range(n_expert)]
    expert_major = [(r, e) for e in range(n_expert) for r in range(n)]
    source, target = (expert_major, rank_major) if from_expert_major else (rank_major, expert_major)
    starts, pos = {}, 0
    for r, e in source:
        starts[(r, e)] = pos
        pos += counts[r * n_expert + e]
    return torch.cat([y.narrow(0, starts[(r, e)], counts[r * n_expert + e]) for r, e in target])


def _rank_totals(counts: list[int], n: int, n_expert: int, row: int) -> list[int]:
    """Elements per rank: the rows of its n_expert blocks times the row size."""
    return [sum(counts[r * n_expert : (r + 1) * n_expert]) * row for r in range(n)]


def global_scatter(
    x: torch.Tensor, local_count: Counts, global_count: Counts, group: dist.ProcessGroup | None = None
) -> torch.Tensor:
    """Paddle/FastMoE global_scatter: rows of x to n_expert * world_size experts.

    local_count[i] rows of x (in order) go to expert i % n_expert of rank i // n_expert; global_count[i]
    rows come from rank i // n_expert for this rank's expert i % n_expert.

    Args:
        x: Contiguous [sum(local_count), *] rows, sorted by destination expert index i.
        local_count: [n_expert * world_size] rows sent per (rank, expert).
        global_count: [n_expert * world_size] rows received per (source rank, local expert).
        group: A torch.distributed ProcessGroup; None for the default group.

    Returns:
        [sum(global_count), *] rows ordered expert-major, then by source rank. Its gradient is the
        global_gather of the output's gradient.

    Raises:
        AtbError: On bad arguments, before any communication.
    """
    if _direct(x) and type(local_count) in _SEQUENCES and type(global_count) in _SEQUENCES:
        y = _try_direct(_C.direct_global_scatter, group, x, x, local_count, global_count)
        if y is not _NOT_DIRECT:
            return y
    _check_tensor("x", x)
    n, n_expert, local, global_ = _expert_counts(
        x.shape[0] if x.dim() else -1, local_count, global_count, group, scatter=True
    )
    send, recv = _rank_totals(local, n, n_expert, _row_numel(x)), _rank_totals(global_, n, n_expert, _row_numel(x))
    y = all_to_all_v(x, send, _ops.packed(send), recv, _ops.packed(recv), group)
    y = y.view(sum(global_), *x.shape[1:])
    return _regroup(y, global_, n, n_expert, from_expert_major=False)


def global_gather(
    x: torch.Tensor, local_count: Counts, global_count: Counts, group: dist.ProcessGroup | None = None
) -> torch.Tensor:
    """Inverse of global_scatter: expert outputs go back to the ranks their rows came from.

    Args:
        x: Contiguous [sum(global_count), *] rows ordered expert-major, then by source rank.
        local_count: As given to global_scatter.
        global_count: As given to global_scatter.
        group: A torch.distributed ProcessGroup; None for the default group.

    Returns:
        [sum(local_count), *] rows in the order of global_scatter's input. Its gradient is the
        global_scatter of the output's gradient.

    Raises:
        AtbError: On bad arguments, before any communication.
    """
    if _direct(x) and type(local_count) in _SEQUENCES and type(global_count) in _SEQUENCES:
        y = _try_direct(_C.direct_global_gather, group, x, x, local_count, global_count)
        if y is not _NOT_DIRECT:
            return y
    _check_tensor("x", x)
    n, n_expert, local, global_ = _expert_counts(
        x.shape[0] if x.dim() else -1, local_count, global_count, group, scatter=False
    )
    # x's blocks are expert-major; put them rank-major so each source rank's rows are contiguous.
    x_rank_major = _regroup(x, global_, n, n_expert, from_expert_major=True).contiguous()
    send, recv = _rank_totals(global_, n, n_expert, _row_numel(x)), _rank_totals(local, n, n_expert, _row_numel(x))
    y = all_to_all_v(x_rank_major, send, _ops.packed(send), recv, _ops.packed(recv), group)
    return y.view(sum(local), *x.shape[1:])


def all_to_all(x: torch.Tensor, group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """DeepSpeed's _AllToAll: equal splits of dim 0; chunk i goes to rank i. Its own adjoint.

    Args:
        x: [d0, *] with d0 divisible by the group size (made contiguous, as DeepSpeed does).
        group: A torch.distributed ProcessGroup; None for the default group.

    Returns:
        A tensor shaped like x whose chunk j came from rank j.

    Raises:
        AtbError: When dim 0 does not divide by the group size.
    """
    if _direct(x):
        y = _try_direct(_C.direct_all_to_all, group, x, x.contiguous())
        if y is not _NOT_DIRECT:
            return y
    if not isinstance(x, torch.Tensor) or x.dim() == 0:
        raise AtbError("all_to_all needs a tensor with at least 1 dimension")
    x = x.contiguous()
    n = group_size(group)
    if x.shape[0] % n:
        raise AtbError(f"all_to_all splits dim 0 equally: size {x.shape[0]} does not divide by group size {n}")
    chunk = x.numel() // n
    counts = [chunk] * n
    displs = _ops.packed(counts)
    return all_to_all_v(x, counts, displs, counts, displs, group).view(x.shape)


def all_gather(x: torch.Tensor, group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """MindSpore's AllGather: every rank's x concatenated on dim 0 in rank order.

    Args:
        x: Contiguous [d0, *]; the same shape on every rank.
        group: A torch.distributed ProcessGroup; None for the default group.

    Returns:
        [world_size * d0, *]. Its gradient is the reduce-scatter (sum) of the output's gradient.

    Raises:
        AtbError: On bad arguments, before any communication.
    """
    if _direct(x):
        y = _try_direct(_C.direct_all_gather, group, x, x)
        if y is not _NOT_DIRECT:
            return y
    _check_tensor("x", x)
    if x.dim() == 0:
        raise AtbError("all_gather concatenates on dim 0: x needs at least 1 dimension")
    resolve_group(group)
    return torch.ops.atb_ops.all_gather(x, comm_for(group, x))


def _check_op(op: str) -> str:
    if op not in REDUCE_OPS:
        raise AtbError(f"op must be one of {REDUCE_OPS}, got {op!r}")
    return op


def all_reduce(x: torch.Tensor, op: str = "sum", group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """The elementwise reduction of x over the group's ranks (a new tensor; x is not modified).

    float16 and bfloat16 accumulate in float32; every rank gets the same bits.

    Args:
        x: Contiguous input, the same shape and dtype on every rank.
        op: "sum", "prod", "max" or "min".
        group: A torch.distributed ProcessGroup; None for the default group.

    Returns:
        A tensor shaped like x. Differentiable for op="sum" (its gradient is the all_reduce of the gradient).

    Raises:
        AtbError: On bad arguments, before any communication.
    """
    if _direct(x) and type(op) is str:
        y = _try_direct(_C.direct_all_reduce, group, x, x, op)
        if y is not _NOT_DIRECT:
            return y
    _check_tensor("x", x)
    _check_op(op)
    return torch.ops.atb_ops.all_reduce(x, op, comm_for(group, x))


def reduce_scatter(x: torch.Tensor, op: str = "sum", group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """Reduce over ranks, then scatter dim 0: rank r gets the reduction of every rank's chunk r.

    Args:
        x: Contiguous [world_size * d0, *], the same shape on every rank.
        op: "sum", "prod", "max" or "min".
        group: A torch.distributed ProcessGroup; None for the default group.

    Returns:
        [d0, *]. Differentiable for op="sum" (its gradient is the all_gather of the gradient).

    Raises:
        AtbError: When dim 0 does not divide by the group size, and on other bad arguments.
    """
    if _direct(x) and type(op) is str:
        y = _try_direct(_C.direct_reduce_scatter, group, x, x, op)
        if y is not _NOT_DIRECT:
            return y
    _check_tensor("x", x)
    _check_op(op)
    n = group_size(group)
    if x.dim() == 0 or x.shape[0] % n:
        raise AtbError(f"reduce_scatter splits dim 0 equally: shape {list(x.shape)} does not divide by group size {n}")
    return torch.ops.atb_ops.reduce_scatter(x, op, comm_for(group, x))


def broadcast(x: torch.Tensor, src: int = 0, group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """Rank `src`'s x on every rank (a new tensor; x is not modified).

    Args:
        x: Contiguous input of the same shape and dtype on every rank (only src's values matter).
        src: The rank, in the group, whose x is sent.
        group: A torch.distributed ProcessGroup; None for the default group.

    Returns:
        A tensor shaped like x holding src's values.

    Raises:
        AtbError: When src is not a rank of the group, and on other bad arguments.
    """
    if _direct(x) and type(src) is int:
        y = _try_direct(_C.direct_broadcast, group, x, x, src)
        if y is not _NOT_DIRECT:
            return y
    _check_tensor("x", x)
    n = group_size(group)
    if isinstance(src, bool) or not isinstance(src, int) or not 0 <= src < n:
        raise AtbError(f"src must be a rank in [0, {n}), got {src!r}")
    return torch.ops.atb_ops.broadcast(x, src, comm_for(group, x))
