"""Framework-style collectives over torch.distributed groups: Paddle, DeepSpeed and MindSpore shapes.

Each collective has one native body that checks its arguments and runs (csrc/framework/collectives.h);
these functions only convert arguments and choose the way in: straight to the body (atb_ops._C.direct_*)
when nothing needs the dispatcher, else the torch.ops.atb_ops op (autograd, torch.compile, profilers),
which runs the same body, so ranks that took different ways still make the same calls. Bad arguments
raise AtbError, a RuntimeError and ValueError naming the argument and values, before any communication.
CPU tensors run on the node-local shared-memory path when the whole group is on this host, otherwise on
the group's own backend (see atb_ops._groups, ATB_OPS_CPU_PATH).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from concurrent.futures import Future

import torch
import torch.distributed as dist

from atb_ops import _C, _ops, _ordering  # noqa: F401  (_ops registers the ops' fake kernels and autograd)
from atb_ops._groups import comm_for, group_size, known_comm, resolve_group, rides_group
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


# What the native bodies raise for bad arguments (the dispatcher hands them over as RuntimeError).
_ARGUMENT_ERRORS = tuple(f"ERROR_INVALID_{k}" for k in ("PARAM", "IN_TENSOR_NUM", "TENSOR_DTYPE", "TENSOR_FORMAT",
                                                         "TENSOR_DIM", "TENSOR_SIZE"))


def _native(fn, *args):
    """fn(*args), a torch.ops.atb_ops op or an atb_ops._C function, with argument errors raised as AtbError."""
    try:
        return fn(*args)
    except AtbError:
        raise
    except RuntimeError as e:
        if str(e).startswith(_ARGUMENT_ERRORS):
            raise AtbError(str(e).splitlines()[0]) from None
        raise


def _comm(group: dist.ProcessGroup | None, x: torch.Tensor, check, *, settle: bool = True) -> int:
    """The group's communicator handle for tensors like x. Making the first one is itself a collective, so
    `check(group size)` (the call's native checks) runs before it: bad arguments never communicate. With `settle`
    (every synchronous call), the group's earlier asynchronous calls are finished first (see _settle)."""
    if settle and _ordering.pending():
        _settle(group)
    comm = known_comm(group, x)
    if comm is None:
        _native(check, group_size(group))
        comm = comm_for(group, x)
    return comm


def _tensor(name: str, x) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise AtbError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def _as_counts(name: str, value: Counts) -> list[int]:
    """A list of ints from a list, tuple or integer tensor (host or device); the values are checked natively."""
    if type(value) in (list, tuple) and all(type(v) is int for v in value):
        values = list(value)
    elif isinstance(value, torch.Tensor):
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
        # numbers.Integral takes numpy's integers (a count array from numpy), never a float or a bool.
        if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
            raise AtbError(f"{name} must hold ints only, got {values}")
        values = [int(v) for v in values]
    if values and (max(values) > _INT64_MAX or min(values) < -_INT64_MAX - 1):
        i, v = next((i, v) for i, v in enumerate(values) if not -_INT64_MAX - 1 <= v <= _INT64_MAX)
        raise AtbError(f"{name}[{i}] = {v} does not fit int64 (max {_INT64_MAX})")
    return values


def _op_name(op) -> str:
    if not isinstance(op, str):
        raise AtbError(f"op must be one of ('sum', 'prod', 'max', 'min'), got {op!r}")
    return op


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
    _tensor("x", x)
    layout = [_as_counts(name, v) for name, v in (("send_counts", send_counts), ("sdispls", sdispls),
                                                   ("recv_counts", recv_counts), ("rdispls", rdispls))]
    comm = _comm(group, x, lambda n: _C.check_all_to_all_v(n, x, *layout))
    if _direct(x):
        return _C.direct_all_to_all_v(x, *layout, comm)
    return _native(torch.ops.atb_ops.all_to_all_v, x, *layout, comm)


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


def _settle(group: dist.ProcessGroup | None) -> None:
    """Waits until the group's asynchronous calls so far have run (see atb_ops._ordering)."""
    _ordering.settle(resolve_group(group).group_name)


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
        sync_op: False returns at once; the returned Task's wait() blocks until out_tensor is written. Where the
            group itself carries the data (ranks on several hosts), the call has completed when it returns, so it
            keeps its place among torch.distributed's own calls on that group.

    Returns:
        A Task; wait() re-raises the collective's error.

    Raises:
        AtbError: On bad arguments, before any communication.
    """
    _tensor("in_tensor", in_tensor)
    _tensor("out_tensor", out_tensor)
    outs = None if out_split_sizes is None else _as_counts("out_split_sizes", out_split_sizes)
    ins = None if in_split_sizes is None else _as_counts("in_split_sizes", in_split_sizes)
    comm = _comm(group, in_tensor, lambda n: _C.check_alltoall_single(n, out_tensor, in_tensor, outs, ins),
                 settle=sync_op)
    direct = _direct(in_tensor, out_tensor) and not out_tensor.requires_grad
    fn = _C.direct_alltoall_single if direct else torch.ops.atb_ops.alltoall_single
    if sync_op or rides_group(comm):
        # Through the group itself (across hosts) the call runs now, in the caller's thread: from a worker it could
        # reach the group after a torch.distributed call made later on this rank and before it on another (a hang).
        if not sync_op and _ordering.pending():
            _settle(group)
        _native(fn, out_tensor, in_tensor, outs, ins, comm)
        return _DONE
    # Checked now, in the caller: a bad call raises here, not from Task.wait().
    _native(_C.check_alltoall_single, group_size(group), out_tensor, in_tensor, outs, ins)
    return Task(_ordering.submit(resolve_group(group).group_name,
                                 lambda: _native(fn, out_tensor, in_tensor, outs, ins, comm)))


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
    return _experts(x, local_count, global_count, group, scatter=True)


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
    return _experts(x, local_count, global_count, group, scatter=False)


def _experts(x, local_count, global_count, group, scatter: bool) -> torch.Tensor:
    _tensor("x", x)
    local, global_ = _as_counts("local_count", local_count), _as_counts("global_count", global_count)
    comm = _comm(group, x, lambda n: _C.check_experts(n, x, local, global_, scatter))
    if _direct(x):
        fn = _C.direct_global_scatter if scatter else _C.direct_global_gather
    else:
        fn = torch.ops.atb_ops.global_scatter if scatter else torch.ops.atb_ops.global_gather
    return _native(fn, x, local, global_, comm)


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
    _tensor("x", x)
    comm = _comm(group, x, lambda n: _C.check_all_to_all(n, x))
    fn = _C.direct_all_to_all if _direct(x) else torch.ops.atb_ops.all_to_all
    return _native(fn, x, comm)


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
    _tensor("x", x)
    comm = _comm(group, x, lambda n: _C.check_all_gather(x))
    fn = _C.direct_all_gather if _direct(x) else torch.ops.atb_ops.all_gather
    return _native(fn, x, comm)


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
    _tensor("x", x)
    op = _op_name(op)
    comm = _comm(group, x, lambda n: _C.check_reduction(x, op))
    fn = _C.direct_all_reduce if _direct(x) else torch.ops.atb_ops.all_reduce
    return _native(fn, x, op, comm)


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
    _tensor("x", x)
    op = _op_name(op)
    comm = _comm(group, x, lambda n: _C.check_reduce_scatter(n, x, op))
    fn = _C.direct_reduce_scatter if _direct(x) else torch.ops.atb_ops.reduce_scatter
    return _native(fn, x, op, comm)


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
    _tensor("x", x)
    if type(src) is not int:
        raise AtbError(f"src must be a rank in [0, {group_size(group)}), got {src!r}")
    comm = _comm(group, x, lambda n: _C.check_broadcast(n, x, src))
    fn = _C.direct_broadcast if _direct(x) else torch.ops.atb_ops.broadcast
    return _native(fn, x, src, comm)
