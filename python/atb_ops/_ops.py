"""Fake kernels and autograd for the torch.ops.atb_ops collectives (their kernels are in op_plugin/)."""

from __future__ import annotations

import itertools
import math

import torch

ROUTE_ARGS = 6  # backend, comm_domain, job_key, group_name, rank, world_size


def packed(counts: list[int]) -> list[int]:
    """Displacements that pack the regions back to back in rank order."""
    return [0, *itertools.accumulate(counts)][:-1]


@torch.library.register_fake("atb_ops::all_to_all_v")
def _all_to_all_v_fake(x, send_counts, sdispls, recv_counts, rdispls, *route):
    return x.new_empty(sum(recv_counts))


@torch.library.register_fake("atb_ops::all_gather")
def _all_gather_fake(x, backend, comm_domain, job_key, group_name, rank, world_size):
    return x.new_empty((world_size * x.shape[0], *x.shape[1:]))


def _all_to_all_v_setup(ctx, inputs, output):
    x, send_counts, sdispls, recv_counts, rdispls, *route = inputs
    ctx.layout = (list(send_counts), list(sdispls), list(recv_counts), list(rdispls))
    ctx.route = route
    ctx.x_shape = x.shape


def _all_to_all_v_backward(ctx, grad):
    """The adjoint: gradients travel back along the transposed layout; overlapping or gapped send
    regions accumulate (a region sent twice gets both gradients)."""
    send_counts, sdispls, recv_counts, rdispls = ctx.layout
    back = packed(send_counts)
    g = torch.ops.atb_ops.all_to_all_v(grad.contiguous(), recv_counts, rdispls, send_counts, back, *ctx.route)
    numel = math.prod(ctx.x_shape)
    if sdispls == back and sum(send_counts) == numel:
        grad_x = g
    else:
        grad_x = grad.new_zeros(numel)
        for count, dst, src in zip(send_counts, sdispls, back, strict=True):
            if count:
                grad_x[dst : dst + count] += g[src : src + count]
    return (grad_x.view(ctx.x_shape), None, None, None, None) + (None,) * ROUTE_ARGS


torch.library.register_autograd("atb_ops::all_to_all_v", _all_to_all_v_backward, setup_context=_all_to_all_v_setup)


def _all_gather_setup(ctx, inputs, output):
    x, *route = inputs
    ctx.route = route
    ctx.x_shape = x.shape


def _all_gather_backward(ctx, grad):
    """Reduce-scatter: rank j's slice of every rank's gradient goes to rank j, which sums them."""
    world_size = ctx.route[-1]
    chunk = math.prod(ctx.x_shape)
    counts = [chunk] * world_size
    displs = packed(counts)
    g = torch.ops.atb_ops.all_to_all_v(grad.contiguous(), counts, displs, counts, displs, *ctx.route)
    return (g.view(world_size, *ctx.x_shape).sum(0),) + (None,) * ROUTE_ARGS


torch.library.register_autograd("atb_ops::all_gather", _all_gather_backward, setup_context=_all_gather_setup)
