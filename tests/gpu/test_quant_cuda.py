"""atb_ops.quant's CUDA kernels (csrc/quant/quant_cuda.cu) on a real GPU, against the plain-torch reference.

The reference (tests/quant/quant_reference.py, computed on the CPU) is the one the CPU kernels match bit for bit;
the CUDA kernels are built with --fmad=false and the same operation order, so they must match it bit for bit too.
The last tests run quantized_all_reduce on one GPU over torch's nccl group (world size 1: the path, its ops on
CUDA tensors and its communicator, not the traffic). Skipped, with the reason, without a CUDA device or where
this atb_ops was built without its CUDA kernels (a CPU torch): the CPU kernels' own tests are
tests/quant/test_quant.py, and scripts/compile_check_quant_cuda.sh compiles this file's kernels with nvcc.
"""

from __future__ import annotations

import json
import math
import os
import socket
from pathlib import Path

import pytest
import torch

import atb_ops
from tests.quant.quant_reference import dequantize_ref, int8_golden, packed_ref, quantize_ref


def _cuda_kernels_built() -> bool:
    record = Path(atb_ops.__file__).resolve().parent / "BUILT_PARTS.json"
    parts = json.loads(record.read_text()).get("parts", {}) if record.is_file() else {}
    return bool(parts.get("CUDA quantisation kernels", {}).get("built"))


pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="needs a CUDA device (torch.cuda.is_available() is False)"),
    pytest.mark.skipif(not _cuda_kernels_built(),
                       reason="atb_ops was built without its CUDA quantisation kernels (BUILT_PARTS.json)"),
]

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
# (elements, block size): one short block, several whole ones, a short last block, a block size that is no
# power of two, and one large enough for many thread blocks.
SHAPES = [(1, 128), (1000, 128), (1000, 100), (4096, 128), (777, 5), (1 << 20, 128)]


def _data(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Gaussian values over six decades (so blocks' scales differ widely), on the CPU."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g, dtype=torch.float64) * torch.logspace(-3, 3, n, dtype=torch.float64).flip(0)
    return x.to(dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: str(d).removeprefix("torch."))
def test_quantize_and_dequantize_match_the_reference_bit_for_bit(dtype: torch.dtype) -> None:
    for n, block_size in SHAPES:
        x = _data(n, dtype, seed=n + block_size)
        q, scale = torch.ops.atb_ops.quantize_int8(x.cuda(), block_size, True)
        q_ref, scale_ref = quantize_ref(x, block_size)
        assert q.is_cuda and scale.is_cuda
        assert torch.equal(q.cpu(), q_ref), (n, block_size)
        assert torch.equal(scale.cpu(), scale_ref), (n, block_size)
        for out_dtype in (torch.float16, torch.bfloat16, torch.float32):
            y = torch.ops.atb_ops.dequantize_int8(q, scale, out_dtype, block_size)
            assert torch.equal(y.cpu(), dequantize_ref(q_ref, scale_ref, out_dtype, block_size)), (n, out_dtype)


def test_zero_blocks_and_non_contiguous_input() -> None:
    x = torch.zeros(3, 300)
    x[1, 7] = -2.5
    q, scale = torch.ops.atb_ops.quantize_int8(x.cuda().t(), 128, True)  # a transposed view: read as its values
    q_ref, scale_ref = quantize_ref(x.t().contiguous(), 128)
    assert torch.equal(q.cpu(), q_ref) and torch.equal(scale.cpu(), scale_ref)
    assert int((scale.cpu() == 0).sum()) == int((scale_ref == 0).sum()) > 0


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_input_raises_naming_the_block(bad: float) -> None:
    x = torch.ones(1000, device="cuda")
    x[300] = bad
    with pytest.raises(ValueError, match="non-finite value.*block 2 of 8"):
        torch.ops.atb_ops.quantize_int8(x, 128, True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_packed_wire_format_matches_the_reference(dtype: torch.dtype) -> None:
    for n, block_size, shard_blocks in ((1, 128, 1), (1000, 128, 4), (1000, 100, 3), (777, 5, 7), (1 << 20, 128, 97)):
        x = _data(n, dtype, seed=n)
        packed = torch.ops.atb_ops.quantize_int8_packed(x.cuda(), block_size, shard_blocks, False)
        want = packed_ref(x, block_size, shard_blocks)
        assert torch.equal(packed.cpu(), want), (n, block_size, shard_blocks)
        q, scale = quantize_ref(x, block_size)
        for out_dtype in (torch.float16, torch.float32):
            y = torch.ops.atb_ops.dequantize_int8_packed(packed, n, block_size, shard_blocks, out_dtype)
            assert torch.equal(y.cpu(), dequantize_ref(q, scale, out_dtype, block_size)), (n, out_dtype)
        shards = math.ceil(math.ceil(n / block_size) / shard_blocks)
        shard_bytes = shard_blocks * block_size + 4 * shard_blocks
        for skip in {0, shards - 1}:  # the others' bytes back to back, the skipped shard left out
            kept = [want[j * shard_bytes:(j + 1) * shard_bytes] for j in range(shards) if j != skip]
            skipped = torch.ops.atb_ops.quantize_int8_packed(x.cuda(), block_size, shard_blocks, False, skip)
            assert torch.equal(skipped.cpu(), torch.cat(kept) if kept else want[:0]), (n, skip)


def test_packed_marks_a_non_finite_block_nan() -> None:
    x = torch.ones(300)
    x[130] = float("inf")
    packed = torch.ops.atb_ops.quantize_int8_packed(x.cuda(), 128, 2, False)
    y = torch.ops.atb_ops.dequantize_int8_packed(packed, 300, 128, 2, torch.float32).cpu()
    assert bool(torch.isnan(y[128:256]).all()) and bool((y[:128] == 1).all()) and bool((y[256:] == 1).all())


def _row_sum(q: torch.Tensor, scale: torch.Tensor, group: int, period: int) -> list[torch.Tensor]:
    """Each row's float32 terms code * its scale (scale index (i // group) % period), computed on the CPU."""
    idx = (torch.arange(q.shape[1]) // group) % period
    return [q[r].to(torch.float32) * scale[r, idx] for r in range(q.shape[0])]


def test_dequantize_sum_matches_the_row_sum_in_rank_order() -> None:
    g = torch.Generator().manual_seed(7)
    rows, length = 3, 100_000
    buf = torch.randint(-128, 128, (rows, length + 24), generator=g, dtype=torch.int8)
    q = buf[:, 5:5 + length]  # strided rows, as the all-to-all's receive buffer gives them
    # per block (group 128), per channel (group 1, period 37), per row (period 1)
    for group, period in ((128, math.ceil(length / 128)), (1, 37), (length, 1)):
        scale = torch.rand(rows, period, generator=g)
        terms = _row_sum(q, scale, group, period)
        exact = torch.randn(length, generator=g)
        for position in (None, 0, rows):
            ordered = terms if position is None else terms[:position] + [exact] + terms[position:]
            want = ordered[0]
            for t in ordered[1:]:
                want = want + t
            extra = () if position is None else (exact.cuda(), position)
            for out_dtype in (torch.float16, torch.bfloat16, torch.float32):
                got = torch.ops.atb_ops.dequantize_sum_int8(q.cuda(), scale.cuda(), group, period, out_dtype, *extra)
                assert torch.equal(got.cpu(), want.to(out_dtype)), (group, period, position, out_dtype)


def test_dequantize_sum_requantize_matches_sum_then_quantize() -> None:
    g = torch.Generator().manual_seed(8)
    for rows, length, padded, block_size in ((2, 1000, 1024, 128), (3, 0, 256, 128), (4, 70_000, 70_100, 100)):
        blocks = max(math.ceil(length / block_size), 1)
        q = torch.randint(-128, 128, (rows, length), generator=g, dtype=torch.int8)
        scale = torch.rand(rows, blocks, generator=g)
        summed = torch.zeros(length)
        for t in _row_sum(q, scale, block_size, blocks):
            summed = summed + t
        want = packed_ref(torch.cat([summed, torch.zeros(padded - length)]), block_size, math.ceil(padded / block_size))
        got = torch.ops.atb_ops.dequantize_sum_requantize_int8(q.cuda(), scale.cuda(), block_size, blocks, block_size,
                                                               padded)
        assert torch.equal(got.cpu(), want), (rows, length, padded)


@pytest.fixture(scope="module")
def nccl_group():
    """torch.distributed on nccl, world size 1 (this process, GPU 0), for the module's all-reduce tests."""
    import torch.distributed as dist

    if "nccl (cuda)" not in atb_ops.backends():
        pytest.skip(f"atb_ops was built without the NCCL backend (built: {atb_ops.backends()})")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    yield dist.group.WORLD
    dist.destroy_process_group()


@pytest.mark.parametrize("out_dtype", [torch.float16, torch.float32])
def test_quantized_all_reduce_of_floats_on_one_gpu(nccl_group, out_dtype: torch.dtype) -> None:
    from atb_ops import quant

    x = _data(10_000, torch.float32, seed=11).reshape(100, 100)
    got = quant.quantized_all_reduce(x.cuda(), nccl_group, out_dtype=out_dtype)
    # One rank: its own shard never travels, so it is its values cast to out_dtype, exactly.
    assert got.is_cuda and torch.equal(got.cpu(), x.to(out_dtype))
    requantized = quant.quantized_all_reduce(x.cuda(), nccl_group, out_dtype=torch.float32, quantize_allgather=True)
    q, scale = quantize_ref(torch.cat([x.reshape(-1), torch.zeros(10_112 - 10_000)]), 128)
    assert torch.equal(requantized.cpu(), dequantize_ref(q, scale, torch.float32, 128)[:10_000].reshape(100, 100))


def test_quantized_all_reduce_of_int8_codes_on_one_gpu(nccl_group) -> None:
    from atb_ops import quant

    g = torch.Generator().manual_seed(12)
    x = torch.randint(-128, 128, (64, 48), generator=g, dtype=torch.int8)
    per_channel = torch.rand(48, generator=g).to(torch.float16)
    got = quant.quantized_all_reduce(x.cuda(), nccl_group, scale=per_channel.cuda(), out_dtype=torch.float32)
    assert torch.equal(got.cpu(), int8_golden([x], [per_channel], torch.float32))
