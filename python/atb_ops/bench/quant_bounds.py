"""How far each variant of ``bench --op quant_allreduce`` may be from the exact sum: its ``#wrong`` column counts
the elements past this bound, as nccl-tests' counts the elements that differ from the expected sum.

The bounds are the ones docs/quant.md derives; they are loose on purpose (a few ulps and the reducing rank's own
term to spare), so an element past one is wrong data, never rounding:

- a plain all-reduce in dtype ``t`` (the inputs cast to ``t``, summed in ``t``): ``(W + 1) * eps(t) * sum_r |x_r|``;
- the int8 pipeline: every rank's quantised term off by at most ``absmax_r(block) / 254``, float32 accumulation,
  and the rounding of ``out_dtype``; with ``quantize_allgather`` also ``absmax(reduced block) / 254``.
"""

from __future__ import annotations

from typing import Any


def plain(xs: list[Any], dtype: Any) -> Any:
    """The bound of an all-reduce done in `dtype`, per element (float64).

    Args:
        xs: every rank's input (any float dtype), in rank order.
        dtype: the dtype the inputs are cast to and summed in.

    Returns:
        A float64 tensor shaped like the inputs.
    """
    import torch

    magnitude = torch.stack([x.double().abs() for x in xs]).sum(0)
    return (len(xs) + 1) * torch.finfo(dtype).eps * magnitude


def quantised(xs: list[Any], exact: Any, block_size: int, out_dtype: Any, quantize_allgather: bool) -> Any:
    """The bound of atb_ops.quant.quantized_all_reduce, per element (float64).

    Args:
        xs: every rank's input, in rank order (1-D, one length).
        exact: their float64 sum.
        block_size: elements per quantisation scale (blocks start at element 0).
        out_dtype: the result's dtype.
        quantize_allgather: whether the reduced blocks travel as int8 again.

    Returns:
        A float64 tensor shaped like `exact`.
    """
    import torch

    count = exact.numel()
    blocks = -(-count // block_size)

    def block_max(t: Any) -> Any:
        padded = torch.zeros(blocks * block_size, dtype=torch.float64)
        padded[:count] = t
        return padded.view(blocks, block_size).amax(1).repeat_interleave(block_size)[:count]

    bound = sum(block_max(x.double().abs()) for x in xs) / 254 + plain(xs, torch.float32)
    if quantize_allgather:
        # The reduced block is quantised again: its absmax is at most the exact block's plus the error so far.
        bound = bound + (block_max(exact.abs()) + block_max(bound)) / 254
    bound = bound + torch.finfo(out_dtype).eps * (exact.abs() + bound)
    return bound * (1 + 1e-6) + torch.finfo(torch.float32).tiny
