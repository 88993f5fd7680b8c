"""The int8 pipeline: block quantisation and an all-reduce that moves int8 (docs/contract.md, section 4).

Quantisation (kernels in csrc/quant/, CPU and CUDA; the same definition on both):

- ``x`` is flattened and cut into blocks of ``block_size`` consecutive elements; the last block may be
  short. ``scale[b] = absmax(block b) / 127`` in float32; ``q = round(x / scale)`` with round half to
  even (IEEE float32 division, then clamp to [-127, 127]), so codes are symmetric and -128 never occurs.
- A block of zeros gets scale 0 and codes 0 (never NaN); so does a block whose absmax / 127 underflows.
- ``dequantize: float(q) * scale`` (one float32 multiply), then a cast to the requested dtype.
- NaN or infinity in ``x``: :func:`quantize_int8` raises ``ValueError`` naming the first bad element.
  :func:`quantized_all_reduce` instead propagates, so no rank raises while its peers wait: a block that
  travels as int8 travels with scale NaN and is NaN in every rank's result; a value the reducing rank
  adds itself stays what IEEE arithmetic makes of it (NaN, or inf), unless the quantised all-gather
  re-quantises its block (then that block is NaN).

The all-reduce (the low-bit path of Ascend's aclnnQuantMatmulAllReduceV3, seed 004)::

    a2a = all_to_all(int8 shards + their scales)          # reduce-scatter, moving int8
    rs  = sum_r dequantise(a2a[r]) in float32, cast to out_dtype   (or re-quantised, quantize_allgather)
    out = all_gather(rs)

Shards are whole blocks: shard ``j`` is elements ``[j * L, (j + 1) * L)`` of the flattened tensor with
``L = ceil(blocks / world_size) * block_size``, so the last ranks' shards may be short or empty and no
input is padded or copied for alignment. Rank ``j`` reduces shard ``j``; for a floating ``x`` its own
part of shard ``j`` never leaves it, so it is neither quantised nor sent but added exactly, in its rank's
place in the float32 sum (every element is still summed in rank order, on exactly one rank, so all ranks
get identical results). Per-channel scales are sliced per shard starting at the shard's first element's
channel, so they stay aligned for any length and any number of channels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.distributed as dist

from atb_ops import _C  # noqa: F401  (loads the torch.ops.atb_ops kernels)
from atb_ops import distributed as _distributed
from atb_ops._groups import comm_for, resolve_group
from atb_ops._ops import packed as _packed
from atb_ops.errors import AtbError

__all__ = [
    "FLOAT_DTYPES",
    "ReducePlan",
    "dequantize_int8",
    "plan_all_reduce",
    "quantize_int8",
    "quantized_all_reduce",
]

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
SCALE_BYTES = 4  # scales travel as float32


# --- The collectives this pipeline is built on (atb_ops.distributed; one place to switch) -------------


def _all_to_all_v(
    x: torch.Tensor,
    send_counts: list[int],
    sdispls: list[int],
    recv_counts: list[int],
    rdispls: list[int],
    group: dist.ProcessGroup | None,
) -> torch.Tensor:
    return _distributed.all_to_all_v(x, send_counts, sdispls, recv_counts, rdispls, group)


def _all_gather(x: torch.Tensor, group: dist.ProcessGroup | None) -> torch.Tensor:
    return _distributed.all_gather(x, group)


# --- Kernels ---------------------------------------------------------------------------------------


def _check_block_size(block_size: int) -> None:
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0:
        raise AtbError(f"block_size must be a positive int, got {block_size!r}")


def _check_float_dtype(name: str, dtype: torch.dtype) -> None:
    if dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be one of float16, bfloat16, float32, float64, got {dtype}")


def quantize_int8(x: torch.Tensor, block_size: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 quantisation with one float32 scale per block of ``block_size`` elements.

    Blocks are consecutive elements of ``x`` flattened (the last block may be short). Rounding is half to
    even; codes lie in [-127, 127]. A block of zeros gets scale 0 and codes 0. Not differentiable: the outputs
    never require grad, whatever ``x`` does (rounding has no useful gradient).

    Args:
        x: float16, bfloat16, float32 (or float64) tensor of any shape, on CPU or CUDA.
        block_size: Elements per scale, > 0.

    Returns:
        ``(q, scale)``: ``q`` int8 shaped like ``x``; ``scale`` float32 of shape
        ``[ceil(x.numel() / block_size)]``, ``absmax / 127`` of each block.

    Raises:
        TypeError: When ``x`` is not a floating tensor.
        ValueError: When ``block_size <= 0``, or ``x`` holds NaN or infinity (the message names the
            first such element: int8 cannot carry it, and silently zeroing it would hide the problem).
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    _check_float_dtype("x", x.dtype)
    _check_block_size(block_size)
    return torch.ops.atb_ops.quantize_int8(x.detach(), block_size, True)


def dequantize_int8(
    q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float16, block_size: int = 128
) -> torch.Tensor:
    """Inverse of :func:`quantize_int8`: ``float(q) * scale`` per block, cast to ``dtype``.

    Args:
        q: int8 codes of any shape.
        scale: float32 ``[ceil(q.numel() / block_size)]``, on q's device.
        dtype: float16, bfloat16, float32 or float64.
        block_size: The block size ``q`` was quantised with.

    Returns:
        A tensor shaped like ``q`` of ``dtype``. A NaN scale gives NaN for its whole block.

    Raises:
        TypeError: When ``q`` is not int8, ``scale`` not float32, or ``dtype`` not floating.
        ValueError: When ``scale`` has the wrong number of blocks or ``block_size <= 0``.
    """
    if not isinstance(q, torch.Tensor) or not isinstance(scale, torch.Tensor):
        raise TypeError("q and scale must be torch.Tensors")
    if q.dtype != torch.int8:
        raise TypeError(f"q must be int8, got {q.dtype}")
    if scale.dtype != torch.float32:
        raise TypeError(f"scale must be float32, got {scale.dtype}")
    _check_float_dtype("dtype", dtype)
    _check_block_size(block_size)
    return torch.ops.atb_ops.dequantize_int8(q, scale, dtype, block_size)


@torch.library.register_fake("atb_ops::quantize_int8")
def _quantize_int8_fake(x, block_size=128, raise_on_nonfinite=True):
    blocks = (x.numel() + block_size - 1) // block_size
    return x.new_empty(x.shape, dtype=torch.int8), x.new_empty((blocks,), dtype=torch.float32)


@torch.library.register_fake("atb_ops::dequantize_int8")
def _dequantize_int8_fake(q, scale, dtype, block_size=128):
    return q.new_empty(q.shape, dtype=dtype)


@torch.library.register_fake("atb_ops::quantize_int8_packed")
def _quantize_int8_packed_fake(x, block_size, shard_blocks, raise_on_nonfinite, skip_shard=-1):
    def packed_bytes(n: int) -> int:
        return n + 4 * ((n + block_size - 1) // block_size)

    shard = shard_blocks * block_size
    skipped = max(0, min(x.numel(), (skip_shard + 1) * shard) - skip_shard * shard) if skip_shard >= 0 else 0
    return x.new_empty((packed_bytes(x.numel()) - packed_bytes(skipped),), dtype=torch.int8)


@torch.library.register_fake("atb_ops::dequantize_int8_packed")
def _dequantize_int8_packed_fake(packed, numel, block_size, shard_blocks, dtype):
    return packed.new_empty((numel,), dtype=dtype)


@torch.library.register_fake("atb_ops::dequantize_sum_requantize_int8")
def _dequantize_sum_requantize_int8_fake(q, scale, group, period, block_size, padded_len, exact=None, exact_row=0):
    return q.new_empty((padded_len + 4 * ((padded_len + block_size - 1) // block_size),), dtype=torch.int8)


@torch.library.register_fake("atb_ops::dequantize_sum_int8")
def _dequantize_sum_int8_fake(q, scale, group, period, out_dtype, exact=None, exact_row=0):
    return q.new_empty((q.shape[1],), dtype=out_dtype)


# --- The all-reduce --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReducePlan:
    """How quantized_all_reduce cuts a tensor of ``numel`` elements over ``world_size`` ranks.

    ``channels`` is the scale period: the block count for dynamic quantisation (``mode == "block"``),
    ``x.shape[-1]`` for per-channel int8 scales, 1 for a per-tensor scale.
    """

    numel: int
    world_size: int
    block_size: int
    mode: str  # "block" | "channel" | "tensor"
    channels: int

    @property
    def shard(self) -> int:
        """Elements per full shard: whole blocks, so re-quantised shards keep block boundaries."""
        blocks = math.ceil(self.numel / self.block_size)
        return math.ceil(blocks / self.world_size) * self.block_size

    def bounds(self, j: int) -> tuple[int, int]:
        """[start, end) of shard j in the flattened tensor (short or empty for the last ranks)."""
        return min(self.numel, j * self.shard), min(self.numel, (j + 1) * self.shard)

    def length(self, j: int) -> int:
        start, end = self.bounds(j)
        return end - start

    def scales(self, j: int) -> int:
        """Scales that travel with shard j."""
        n = self.length(j)
        if self.mode == "block":
            return math.ceil(n / self.block_size)
        return min(n, self.channels)

    def a2a_bytes(self, j: int) -> int:
        """Bytes of shard j in the all-to-all: its int8 codes, its float32 scales and, for an int8 x, the
        float32 offset (csrc/quant/int8_all_reduce.cpp)."""
        if self.length(j) == 0:
            return 0
        offset = 0 if self.mode == "block" else SCALE_BYTES
        return self.length(j) + SCALE_BYTES * self.scales(j) + offset

    def gather_bytes(self, out_dtype: torch.dtype, quantize_allgather: bool) -> int:
        """Bytes each rank contributes to the all-gather (every rank sends a full, padded shard)."""
        if quantize_allgather:
            return self.shard + SCALE_BYTES * (self.shard // self.block_size)
        return self.shard * torch.empty((), dtype=out_dtype).element_size()

    def bytes_sent(self, rank: int, out_dtype: torch.dtype, quantize_allgather: bool) -> int:
        """Bytes `rank` sends to other ranks in one call (its own shard never leaves it)."""
        a2a = sum(self.a2a_bytes(j) for j in range(self.world_size) if j != rank)
        return a2a + (self.world_size - 1) * self.gather_bytes(out_dtype, quantize_allgather)


def plan_all_reduce(
    numel: int, world_size: int, block_size: int = 128, mode: str = "block", channels: int = 1
) -> ReducePlan:
    """The shard layout of :func:`quantized_all_reduce` (also used by the benchmark to count bytes).

    Args:
        numel: Elements of the tensor.
        world_size: Ranks in the group.
        block_size: Elements per scale of the dynamic (and all-gather) quantisation.
        mode: ``"block"`` (floating x), ``"channel"`` or ``"tensor"`` (int8 x with its scale).
        channels: ``x.shape[-1]`` for ``"channel"``.

    Returns:
        A :class:`ReducePlan`.
    """
    if mode == "block":
        channels = math.ceil(numel / block_size)
    elif mode == "tensor":
        channels = 1
    elif mode != "channel":
        raise AtbError(f"mode must be 'block', 'channel' or 'tensor', got {mode!r}")
    return ReducePlan(numel, world_size, block_size, mode, max(channels, 1))


def _as_scale(scale, x: torch.Tensor) -> tuple[torch.Tensor, str]:
    """The float32 scale on x's device and its kind (per tensor or per channel), checked."""
    if isinstance(scale, bool) or not isinstance(scale, int | float | torch.Tensor):
        raise AtbError(f"scale must be a float or a float16/bfloat16/float32 tensor, got {type(scale).__name__}")
    if not isinstance(scale, torch.Tensor):
        return torch.tensor([float(scale)], dtype=torch.float32, device=x.device), "tensor"
    if scale.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise AtbError(f"scale must be float16, bfloat16 or float32, got {scale.dtype}")
    channels = x.shape[-1] if x.dim() else 1
    if scale.numel() == 1 and scale.dim() <= 1:
        kind = "tensor"
    elif scale.dim() == 1 and scale.shape[0] == channels:
        kind = "channel"
    else:
        raise AtbError(
            f"scale must be a scalar (per tensor) or of shape [x.shape[-1]] = [{channels}] (per channel), "
            f"got shape {list(scale.shape)} for x of shape {list(x.shape)}"
        )
    return scale.detach().to(device=x.device, dtype=torch.float32).reshape(-1).contiguous(), kind


def _float32_rows(raw: torch.Tensor) -> torch.Tensor:
    """[rows, 4 * k] int8 bytes (any strides or offset) as [rows, k] float32, in a fresh aligned buffer."""
    if raw.shape[1] == 0:
        return torch.empty((raw.shape[0], 0), dtype=torch.float32, device=raw.device)
    return raw.clone(memory_format=torch.contiguous_format).view(torch.float32)


def _pad(t: torch.Tensor, length: int) -> torch.Tensor:
    if t.numel() == length:
        return t
    return torch.cat([t, t.new_zeros(length - t.numel())])


def quantized_all_reduce(
    x: torch.Tensor,
    group: dist.ProcessGroup | None = None,
    *,
    scale: torch.Tensor | float | None = None,
    block_size: int = 128,
    out_dtype: torch.dtype = torch.float16,
    quantize_allgather: bool = False,
) -> torch.Tensor:
    """Sum over the ranks of ``group`` moving int8: int8 all-to-all, float32 reduce, all-gather.

    Every rank of the group must call it with a tensor of the same shape and dtype and the same keyword
    arguments (like ``torch.distributed.all_reduce``). The result is identical on every rank.

    - ``x`` int8 (seed 004, Ascend's low-bit path): ``scale`` is required, either per tensor (a float or
      a one-element tensor) or per channel (shape ``[x.shape[-1]]``), float16/bfloat16/float32, and may
      differ between ranks. The result is ``sum_r float(x_r) * float32(scale_r)`` accumulated in float32
      in rank order, then cast to ``out_dtype`` (exact up to that cast when ``quantize_allgather`` is off).
    - ``x`` floating (float16/bfloat16/float32/float64): each rank quantises the shards it sends per block
      of ``block_size`` elements (see :func:`quantize_int8`); the scales travel beside the codes, and the
      shard a rank reduces itself joins the sum unquantised. Error per element: at most
      ``sum over the other ranks r of scale_r / 2`` (``scale_r = absmax_r / 127`` of the element's block
      on rank r), plus float32 rounding and the cast to ``out_dtype``. With one rank the result is ``x``
      cast to ``out_dtype``.
    - ``quantize_allgather=True``: each reduced shard is re-quantised per block before the all-gather
      (int8 + scales instead of ``out_dtype``), adding at most ``absmax(reduced block) / 254`` per element.

    NaN or infinity in a floating ``x`` propagates (see the module docstring): the block it travels in
    becomes NaN on every rank.

    Args:
        x: int8, float16, bfloat16, float32 or float64 tensor of any shape (CPU, or CUDA where built).
        group: A torch.distributed ProcessGroup; None for the default group.
        scale: The dequantisation scale of an int8 ``x``; must be None for a floating ``x``.
        block_size: Elements per scale of the dynamic quantisation and of the quantised all-gather.
        out_dtype: float16, bfloat16, float32 or float64; the all-gather moves this dtype.
        quantize_allgather: Re-quantise the reduced shards before the all-gather.

    Returns:
        A tensor shaped like ``x`` of ``out_dtype``: the sum over ranks.

    Raises:
        AtbError: (a ValueError) on bad arguments, before any communication.
        TypeError: When ``x`` or ``out_dtype`` has an unsupported dtype.
    """
    # Argument checks, before any communication
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype != torch.int8:
        _check_float_dtype("x (or int8 with a scale)", x.dtype)
    _check_float_dtype("out_dtype", out_dtype)
    _check_block_size(block_size)
    if not isinstance(quantize_allgather, bool):
        raise AtbError(f"quantize_allgather must be a bool, got {quantize_allgather!r}")
    if x.dtype == torch.int8:
        if scale is None:
            raise AtbError("x is int8, so scale is required (a float, or a tensor of shape [] / [1] / [x.shape[-1]])")
        scale_f32, mode = _as_scale(scale, x)
    elif scale is not None:
        raise AtbError(f"scale is only for an int8 x; a {x.dtype} x is quantised per block dynamically")
    else:
        scale_f32, mode = None, "block"
    g = resolve_group(group)
    world_size, rank = dist.get_world_size(g), dist.get_rank(g)
    if rank < 0:
        raise AtbError("this process is not a member of the group")
    if x.numel() == 0:
        return torch.empty(x.shape, dtype=out_dtype, device=x.device)
    if x.dtype == torch.int8:
        _distributed._settle(g)  # after the group's pending asynchronous calls, as every synchronous call
        # Seed 004's pipeline for int8 codes is AllReduceOperation's quantType path: one implementation
        # (csrc/quant/int8_all_reduce.cpp), here with no offset.
        return torch.ops.atb_ops.int8_all_reduce(
            x.detach().contiguous(), scale_f32, mode == "channel", 0.0, out_dtype, block_size, quantize_allgather,
            comm_for(g, x),
        )

    flat = x.detach().contiguous().view(-1)
    numel = flat.numel()
    plan = plan_all_reduce(numel, world_size, block_size, mode)

    # 1. Codes and scales of every other rank's shard, packed per destination as [int8 codes | float32 scales
    #    as bytes], back to back in rank order. The own shard never leaves this rank, so it is neither
    #    quantised nor sent: it joins the sum exactly (as term number `rank`, the order every rank uses).
    send_counts = [plan.a2a_bytes(j) if j != rank else 0 for j in range(world_size)]
    recv_counts = [plan.a2a_bytes(rank) if j != rank else 0 for j in range(world_size)]
    mine = plan.length(rank)
    start, end = plan.bounds(rank)
    send = torch.ops.atb_ops.quantize_int8_packed(flat, block_size, plan.shard // block_size, False, rank)
    exact = flat[start:end]

    # 2. Reduce-scatter: the all-to-all brings this rank's shard from every other rank.
    received = _all_to_all_v(send, send_counts, _packed(send_counts), recv_counts, _packed(recv_counts), group)
    rows = received.view(world_size - 1, plan.a2a_bytes(rank))
    row_codes = rows[:, :mine]
    row_scales = _float32_rows(rows[:, mine:])  # [rows, plan.scales(rank)]
    group_size, period = block_size, max(plan.scales(rank), 1)

    # 3. Dequantise and sum this shard in float32, then all-gather it, padded to a full shard (only the last
    #    ranks' are short): in out_dtype, or re-quantised per block ([codes | scales], so the gathered
    #    buffer is the packed form of W full shards).
    if not quantize_allgather:
        reduced = torch.ops.atb_ops.dequantize_sum_int8(
            row_codes, row_scales, group_size, period, out_dtype, exact, rank
        )
        return _all_gather(_pad(reduced, plan.shard), group)[:numel].view(x.shape)
    packed = torch.ops.atb_ops.dequantize_sum_requantize_int8(
        row_codes, row_scales, group_size, period, block_size, plan.shard, exact, rank
    )
    gathered = _all_gather(packed, group)
    out = torch.ops.atb_ops.dequantize_int8_packed(
        gathered, world_size * plan.shard, block_size, plan.shard // block_size, out_dtype
    )
    return out[:numel].view(x.shape)
