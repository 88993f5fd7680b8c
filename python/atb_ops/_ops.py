"""Fake kernels and autograd for the torch.ops.atb_ops collectives (their kernels are in op_plugin/torch/).

Every op takes `comm`, a communicator handle from atb_ops._groups.comm_for.
"""

from __future__ import annotations

import itertools
import math

import torch

from atb_ops import _C, _ordering


def packed(counts: list[int]) -> list[int]:
    """Displacements that pack the regions back to back in rank order."""
    return [0, *itertools.accumulate(counts)][:-1]


@torch.library.register_fake("atb_ops::all_to_all_v")
def _all_to_all_v_fake(x, send_counts, sdispls, recv_counts, rdispls, comm):
    return x.new_empty(sum(recv_counts))


@torch.library.register_fake("atb_ops::alltoall_single")
def _alltoall_single_fake(out, inp, out_split_sizes, in_split_sizes, comm):
    return None


@torch.library.register_fake("atb_ops::all_to_all")
def _all_to_all_fake(x, comm):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.register_fake("atb_ops::global_scatter")
def _global_scatter_fake(x, local_count, global_count, comm):
    return x.new_empty((sum(global_count), *x.shape[1:]))


@torch.library.register_fake("atb_ops::global_gather")
def _global_gather_fake(x, local_count, global_count, comm):
    return x.new_empty((sum(local_count), *x.shape[1:]))


@torch.library.register_fake("atb_ops::all_gather")
def _all_gather_fake(x, comm):
    return x.new_empty((_C.comm_size(comm) * x.shape[0], *x.shape[1:]))


@torch.library.register_fake("atb_ops::all_reduce")
def _all_reduce_fake(x, op, comm):
    return torch.empty_like(x)


@torch.library.register_fake("atb_ops::reduce_scatter")
def _reduce_scatter_fake(x, op, comm):
    return x.new_empty((x.shape[0] // _C.comm_size(comm), *x.shape[1:]))


@torch.library.register_fake("atb_ops::broadcast")
def _broadcast_fake(x, root, comm):
    return torch.empty_like(x)


@torch.library.register_fake("atb_ops::int8_all_reduce")
def _int8_all_reduce_fake(x, scale, per_channel, offset, out_dtype, block_size, quantize_allgather, comm):
    return x.new_empty(x.shape, dtype=out_dtype)


# Every backward below first waits for the asynchronous calls made before it (_ordering.settle(None)): it is a
# synchronous call on its communicator, and ranks must put their calls on it in one order.


def _all_to_all_v_setup(ctx, inputs, output):
    x, send_counts, sdispls, recv_counts, rdispls, comm = inputs
    ctx.layout = (list(send_counts), list(sdispls), list(recv_counts), list(rdispls))
    ctx.comm = comm
    ctx.x_shape = x.shape


def _all_to_all_v_backward(ctx, grad):
    """The adjoint: gradients travel back along the transposed layout; overlapping or gapped send
    regions accumulate (a region sent twice gets both gradients)."""
    _ordering.settle(None)
    send_counts, sdispls, recv_counts, rdispls = ctx.layout
    back = packed(send_counts)
    g = torch.ops.atb_ops.all_to_all_v(grad.contiguous(), recv_counts, rdispls, send_counts, back, ctx.comm)
    numel = math.prod(ctx.x_shape)
    if sdispls == back and sum(send_counts) == numel:
        grad_x = g
    else:
        grad_x = grad.new_zeros(numel)
        for count, dst, src in zip(send_counts, sdispls, back, strict=True):
            if count:
                grad_x[dst : dst + count] += g[src : src + count]
    return grad_x.view(ctx.x_shape), None, None, None, None, None


torch.library.register_autograd("atb_ops::all_to_all_v", _all_to_all_v_backward, setup_context=_all_to_all_v_setup)


def _comm_setup(ctx, inputs, output):
    ctx.comm = inputs[-1]
    ctx.op = inputs[1] if len(inputs) == 3 else "sum"


def _all_gather_backward(ctx, grad):
    """Reduce-scatter (sum): rank j's slice of every rank's gradient goes to rank j."""
    _ordering.settle(None)
    return torch.ops.atb_ops.reduce_scatter(grad.contiguous(), "sum", ctx.comm), None


def _all_reduce_backward(ctx, grad):
    """The sum's gradient is the sum of the gradients (the same on every rank)."""
    _ordering.settle(None)
    if ctx.op != "sum":
        raise RuntimeError(f"atb_ops all_reduce: no gradient for op '{ctx.op}' (only 'sum')")
    return torch.ops.atb_ops.all_reduce(grad.contiguous(), "sum", ctx.comm), None, None


def _reduce_scatter_backward(ctx, grad):
    """Each rank's input chunk j contributed once to rank j's output: all-gather the gradients."""
    _ordering.settle(None)
    if ctx.op != "sum":
        raise RuntimeError(f"atb_ops reduce_scatter: no gradient for op '{ctx.op}' (only 'sum')")
    return torch.ops.atb_ops.all_gather(grad.contiguous(), ctx.comm), None, None


def _all_to_all_backward(ctx, grad):
    """Equal splits are their own adjoint: chunk j of the gradient goes back to rank j."""
    _ordering.settle(None)
    return torch.ops.atb_ops.all_to_all(grad.contiguous(), ctx.comm), None


def _experts_setup(ctx, inputs, output):
    _, ctx.local, ctx.global_, ctx.comm = inputs


def _global_scatter_backward(ctx, grad):
    """The gradients of the scattered rows go back where the rows came from: global_gather."""
    _ordering.settle(None)
    return torch.ops.atb_ops.global_gather(grad.contiguous(), ctx.local, ctx.global_, ctx.comm), None, None, None


def _global_gather_backward(ctx, grad):
    _ordering.settle(None)
    return torch.ops.atb_ops.global_scatter(grad.contiguous(), ctx.local, ctx.global_, ctx.comm), None, None, None


torch.library.register_autograd("atb_ops::all_to_all", _all_to_all_backward, setup_context=_comm_setup)
torch.library.register_autograd("atb_ops::global_scatter", _global_scatter_backward, setup_context=_experts_setup)
torch.library.register_autograd("atb_ops::global_gather", _global_gather_backward, setup_context=_experts_setup)
torch.library.register_autograd("atb_ops::all_gather", _all_gather_backward, setup_context=_comm_setup)
torch.library.register_autograd("atb_ops::all_reduce", _all_reduce_backward, setup_context=_comm_setup)
torch.library.register_autograd("atb_ops::reduce_scatter", _reduce_scatter_backward, setup_context=_comm_setup)
