"""Plain-torch reference of atb_ops.quant's kernels, used ONLY by the tests (never by the library).

It follows the definition in csrc/quant/quant.h with whole-tensor torch operations: scale = absmax / 127
per block in float32, q = round_half_even(clamp(x / scale, -127, 127)) (0 where scale == 0), and
dequantised = float(q) * scale. The kernels must match it bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
import torch


def quantize_ref(x: torch.Tensor, block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(q int8 shaped like x, scale float32 [ceil(numel / block_size)])."""
    flat = x.detach().reshape(-1).to(torch.float32)
    n = flat.numel()
    blocks = math.ceil(n / block_size)
    padded = torch.zeros(blocks * block_size, dtype=torch.float32)
    padded[:n] = flat
    rows = padded.view(blocks, block_size)
    scale = rows.abs().amax(dim=1) / 127 if blocks else torch.zeros(0)
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    q = torch.round((rows / safe[:, None]).clamp(-127, 127))
    q = torch.where(scale[:, None] == 0, torch.zeros_like(q), q).to(torch.int8)
    return q.reshape(-1)[:n].reshape(x.shape), scale


def dequantize_ref(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype, block_size: int) -> torch.Tensor:
    n = q.numel()
    per_element = scale.repeat_interleave(block_size)[:n]
    return (q.reshape(-1).to(torch.float32) * per_element).to(dtype).reshape(q.shape)


def packed_ref(x: torch.Tensor, block_size: int, shard_blocks: int) -> torch.Tensor:
    """The wire format from the reference: per shard of shard_blocks blocks, its codes then its scales."""
    q, scale = quantize_ref(x, block_size)
    q = q.reshape(-1)
    pieces = []
    shard = shard_blocks * block_size
    for j in range(math.ceil(scale.numel() / shard_blocks)):
        pieces.append(q[j * shard : (j + 1) * shard])
        pieces.append(scale[j * shard_blocks : (j + 1) * shard_blocks].contiguous().view(torch.int8))
    return torch.cat(pieces) if pieces else torch.empty(0, dtype=torch.int8)


def int8_golden(xs: list[torch.Tensor], scales: list[torch.Tensor], out_dtype: torch.dtype) -> torch.Tensor:
    """numpy golden of the int8 path: sum_r float32(x_r) * float32(scale_r), in rank order, float32.

    Each scale is per tensor (one element) or per channel ([x.shape[-1]], broadcast over the last dim).
    """
    acc = None
    for x, s in zip(xs, scales, strict=True):
        s32 = s.detach().to(torch.float32).numpy()
        if s32.size == 1:
            s32 = s32.reshape(())
        term = x.numpy().astype(np.float32) * s32
        acc = term if acc is None else (acc + term).astype(np.float32)
    return torch.from_numpy(np.ascontiguousarray(acc)).to(out_dtype)


def shard_elements(numel: int, world_size: int, block_size: int) -> int:
    """Elements of rank j's shard in the all-reduce (the last ones may be short): whole blocks, the blocks split
    as evenly as ceil allows, as the contract of quantized_all_reduce describes its layout."""
    blocks = math.ceil(numel / block_size)
    return math.ceil(blocks / world_size) * block_size
