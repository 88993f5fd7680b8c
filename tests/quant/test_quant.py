"""atb_ops.quant: the int8 kernels against the plain-torch reference (bit-exact), and quantized_all_reduce
on CPU ranks (world sizes 1-4, both CPU paths: shm and the group's gloo) against exact sums.

Error bounds used below (documented in csrc/quant/quant.h and docs/quant.md):

- Quantising one block with scale s = absmax / 127 and round-to-nearest moves each element by at most
  s / 2 = absmax / 254. The all-reduce adds W ranks' terms; the rank that reduces a shard adds its own
  values exactly (they never travel), so element i of block b is off the exact sum by at most
  sum_{r != owner(i)} s_r[b] / 2  (the float32 products and the W-term float32 sum add a relative
  2^-24 each, and the cast to out_dtype half an ulp: u = 2^-11 fp16, 2^-8 bf16, 2^-24 fp32, plus half
  the subnormal spacing near zero, 2^-25 for fp16).
- quantize_allgather re-quantises the reduced block (float32, absmax A) with s2 = A / 127: another
  A / 254 at most, A <= max|exact| + the first error.
- For Gaussian data the rounding errors are uniform on [-s/2, s/2], RMS s / sqrt(12). A block of 128
  N(0, 1) samples has absmax ~ 2.7, so each quantised term contributes RMS ~ 2.7 / (127 * sqrt(12)) =
  0.61% of sigma; W - 1 of the W terms are quantised, so the relative L2 error of the sum is
  ~0.61% * sqrt((W - 1) / W): 0.43% for W = 2, 0.53% for W = 4 (< 1% asserted). Re-quantising the sum
  adds another ~0.6% in quadrature: ~0.75-0.8% (< 2% asserted).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from atb_ops import _C, emulated_hosts, quant
from tests.quant.quant_reference import dequantize_ref, int8_golden, packed_ref, quantize_ref, shard_elements
from tests.quant.quant_tasks import POISON_INDEX, Case, bad_arguments, case_input, run_cases, subgroups

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
UNIT_ROUNDOFF = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 2.0**-24, torch.float64: 2.0**-53}
# Half the spacing of subnormals: the absolute part of rounding to out_dtype near zero.
SUBNORMAL_ROUNDOFF = {torch.float16: 2.0**-25, torch.bfloat16: 2.0**-134, torch.float32: 2.0**-150, torch.float64: 0.0}


# --- Kernels against the reference -----------------------------------------------------------------

# Every kernel test runs on each CPU implementation this machine has (portable scalar C++; AVX2 + F16C).
ISAS = ["scalar"] + (["avx2"] if _C._quant_cpu_isa("auto") == "avx2" else [])


@pytest.fixture(params=ISAS)
def isa(request):
    """The CPU kernels under test (only this process: the ranks below use their own auto choice)."""
    _C._quant_cpu_isa(request.param)
    yield request.param
    _C._quant_cpu_isa("auto")


def _data(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g, dtype=torch.float64) * torch.logspace(-3, 3, n, dtype=torch.float64).flip(0)
    return x.to(dtype)


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("dtype", FLOATS)
def test_quantize_matches_reference_bit_exact(dtype):
    for block_size in (1, 3, 32, 128, 1000):
        for n in (1, 5, 127, 128, 129, 1000, 100_003):
            x = _data(n, dtype, seed=n + block_size)
            q, scale = quant.quantize_int8(x, block_size)
            q_ref, scale_ref = quantize_ref(x, block_size)
            assert q.dtype == torch.int8 and scale.dtype == torch.float32
            assert scale.shape == (math.ceil(n / block_size),)
            assert torch.equal(scale, scale_ref), (dtype, block_size, n)
            assert torch.equal(q, q_ref), (dtype, block_size, n)
            for out_dtype in (torch.float16, torch.bfloat16, torch.float32):
                y = quant.dequantize_int8(q, scale, out_dtype, block_size)
                assert torch.equal(y, dequantize_ref(q, scale, out_dtype, block_size)), (dtype, block_size, n)


@pytest.mark.usefixtures("isa")
def test_quantize_shapes_and_non_contiguous_input():
    x = torch.randn(6, 50, 7).transpose(0, 2)  # [7, 50, 6], not contiguous
    q, scale = quant.quantize_int8(x, 64)
    q_ref, scale_ref = quantize_ref(x.contiguous(), 64)
    assert q.shape == x.shape and torch.equal(q, q_ref) and torch.equal(scale, scale_ref)
    y = quant.dequantize_int8(q, scale, torch.float32, 64)
    assert y.shape == x.shape
    assert bool(((y - x).abs() <= scale.repeat_interleave(64)[: x.numel()].view(x.shape) / 2 + 1e-7).all())


def test_quantize_of_a_tensor_that_requires_grad_gives_outputs_that_do_not():
    """Quantisation is not differentiable: no output requires grad (the scale used to, with no autograd kernel behind
    it: backward gave None and torch's "silently incorrect" warning)."""
    x = torch.randn(300, requires_grad=True)
    q, scale = quant.quantize_int8(x, 128)
    assert not q.requires_grad and not scale.requires_grad
    assert torch.equal(scale, quantize_ref(x.detach(), 128)[1])


@pytest.mark.usefixtures("isa")
def test_rounding_is_half_to_even_and_symmetric():
    # absmax 127 gives scale exactly 1.0, so x / scale is x: ties land on even codes.
    x = torch.tensor([127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, -127.0, 3.49])
    q, scale = quant.quantize_int8(x, 16)
    assert scale.tolist() == [1.0]
    assert q.tolist() == [127, 0, 2, 2, 0, -2, -2, 126, -127, 3]


@pytest.mark.usefixtures("isa")
def test_zero_and_underflowing_blocks_give_zero_scale_and_codes():
    x = torch.zeros(300)
    x[200] = 1.0
    x[130] = 1e-45  # absmax / 127 underflows to 0 in float32: the block quantises to zeros
    q, scale = quant.quantize_int8(x, 64)
    assert scale.tolist()[:2] == [0.0, 0.0] and scale[3] > 0
    assert scale[2] == 0.0
    assert not bool(torch.isnan(scale).any())
    assert int(q[:192].abs().sum()) == 0
    y = quant.dequantize_int8(q, scale, torch.float16, 64)
    assert not bool(torch.isnan(y).any()) and y[200] == 1.0 and int((y != 0).sum()) == 1
    q_ref, scale_ref = quantize_ref(x, 64)
    assert torch.equal(q, q_ref) and torch.equal(scale, scale_ref)


@pytest.mark.usefixtures("isa")
def test_empty_tensor():
    q, scale = quant.quantize_int8(torch.empty(0, 3), 128)
    assert q.shape == (0, 3) and scale.shape == (0,)
    assert quant.dequantize_int8(q, scale).shape == (0, 3)


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_non_finite_input_raises_value_error_naming_it(dtype, bad):
    x = torch.ones(1000, dtype=dtype)
    x[517] = bad
    with pytest.raises(ValueError, match=r"non-finite value \((nan|inf|-inf) at flat index 517, block 4 of 8"):
        quant.quantize_int8(x, 128)


@pytest.mark.usefixtures("isa")
def test_bad_kernel_arguments():
    with pytest.raises(TypeError, match="x must be one of"):
        quant.quantize_int8(torch.ones(3, dtype=torch.int32))
    with pytest.raises(ValueError, match="block_size must be a positive int, got 0"):
        quant.quantize_int8(torch.ones(3), 0)
    with pytest.raises(ValueError, match=r"needs scale of shape \[2\], got \[3\]"):
        quant.dequantize_int8(torch.zeros(200, dtype=torch.int8), torch.ones(3), torch.float16, 128)
    with pytest.raises(TypeError, match="q must be int8"):
        quant.dequantize_int8(torch.zeros(3), torch.ones(1))
    with pytest.raises(TypeError, match="scale must be float32"):
        quant.dequantize_int8(torch.zeros(3, dtype=torch.int8), torch.ones(1, dtype=torch.float16))
    # The raw op's own checks (the C++ kernel, reached without the Python wrapper).
    with pytest.raises(ValueError, match="block_size must be > 0, got -1"):
        torch.ops.atb_ops.quantize_int8(torch.ones(3), -1, True)
    with pytest.raises(ValueError, match="need 4 scales per row, got 3"):
        torch.ops.atb_ops.dequantize_sum_int8(
            torch.zeros(2, 10, dtype=torch.int8), torch.ones(2, 3), 3, 4, torch.float32
        )


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_packed_wire_format_matches_reference(dtype):
    for n, block_size, shard_blocks in ((1, 128, 1), (1000, 128, 4), (1000, 100, 3), (4096, 128, 16), (777, 5, 7)):
        x = _data(n, dtype, seed=n)
        packed = torch.ops.atb_ops.quantize_int8_packed(x, block_size, shard_blocks, False)
        assert torch.equal(packed, packed_ref(x, block_size, shard_blocks)), (n, block_size, shard_blocks)
        q, scale = quantize_ref(x, block_size)
        for out_dtype in (torch.float16, torch.bfloat16, torch.float32):
            y = torch.ops.atb_ops.dequantize_int8_packed(packed, n, block_size, shard_blocks, out_dtype)
            assert torch.equal(y, dequantize_ref(q, scale, out_dtype, block_size)), (n, block_size, out_dtype)


@pytest.mark.usefixtures("isa")
def test_packed_marks_non_finite_blocks_nan_instead_of_raising():
    x = torch.ones(300)
    x[130] = float("inf")
    packed = torch.ops.atb_ops.quantize_int8_packed(x, 128, 2, False)
    y = torch.ops.atb_ops.dequantize_int8_packed(packed, 300, 128, 2, torch.float32)
    assert bool(torch.isnan(y[128:256]).all()) and bool((y[:128] == 1).all()) and bool((y[256:] == 1).all())
    with pytest.raises(ValueError, match="non-finite value"):
        torch.ops.atb_ops.quantize_int8_packed(x, 128, 2, True)


@pytest.mark.usefixtures("isa")
def test_dequantize_sum_modes_match_reference():
    g = torch.Generator().manual_seed(7)
    rows, length = 3, 1000
    buf = torch.randint(-128, 128, (rows, length + 24), generator=g, dtype=torch.int8)
    q = buf[:, 5 : 5 + length]  # strided rows, as the all-to-all's receive buffer gives them
    wide = q.to(torch.float32)

    def summed(per_element_scale):
        acc = wide[0] * per_element_scale[0]
        for r in range(1, rows):
            acc = acc + wide[r] * per_element_scale[r]
        return acc

    # per block (group 128), per channel (group 1, period 37: scale slice of a shard), per row (period 1)
    for group, period, n_scales in ((128, 8, 8), (1, 37, 37), (length, 1, 1), (1, 2000, length)):
        scale = torch.rand(rows, n_scales, generator=g)
        idx = (torch.arange(length) // group) % period
        want = summed(scale[:, idx])
        for out_dtype in (torch.float16, torch.bfloat16, torch.float32):
            got = torch.ops.atb_ops.dequantize_sum_int8(q, scale, group, period, out_dtype)
            assert torch.equal(got, want.to(out_dtype)), (group, period, out_dtype)


@pytest.mark.usefixtures("isa")
def test_dequantize_sum_requantize_matches_sum_then_quantize():
    """The quantised all-gather's fused step equals: row-sum in float32, zero-pad, quantize, pack."""
    g = torch.Generator().manual_seed(8)
    for rows, length, padded, block_size in ((2, 1000, 1024, 128), (3, 0, 256, 128), (4, 700, 700, 100)):
        q = torch.randint(-128, 128, (rows, length), generator=g, dtype=torch.int8)
        scale = torch.rand(rows, max(math.ceil(length / block_size), 1), generator=g)
        # Row sum in float32, in row order, of each code times its block's scale (computed here, not by atb_ops).
        per_element = scale[:, torch.arange(length) // block_size]
        summed = torch.zeros(length)
        for r in range(rows):
            summed = summed + q[r].to(torch.float32) * per_element[r]
        one_shard = math.ceil(padded / block_size)
        want = packed_ref(torch.cat([summed, torch.zeros(padded - length)]), block_size, one_shard)
        got = torch.ops.atb_ops.dequantize_sum_requantize_int8(q, scale, block_size, scale.shape[1], block_size, padded)
        assert torch.equal(got, want), (rows, length, padded)


@pytest.mark.usefixtures("isa")
def test_dequantize_sum_with_an_exact_term_in_its_rank_position():
    g = torch.Generator().manual_seed(9)
    rows, length = 3, 777
    q = torch.randint(-128, 128, (rows, length), generator=g, dtype=torch.int8)
    scale = torch.rand(rows, 7, generator=g)
    per_element = scale[:, torch.arange(length) // 128]
    terms = [q[r].to(torch.float32) * per_element[r] for r in range(rows)]
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        exact = torch.randn(length, generator=g).to(dtype)
        for position in range(rows + 1):
            ordered = terms[:position] + [exact.to(torch.float32)] + terms[position:]
            want = ordered[0]
            for t in ordered[1:]:
                want = want + t
            got = torch.ops.atb_ops.dequantize_sum_int8(q, scale, 128, 7, torch.float32, exact, position)
            assert torch.equal(got, want), (dtype, position)
    alone = torch.randn(10, generator=g)
    got = torch.ops.atb_ops.dequantize_sum_int8(
        torch.zeros(0, 10, dtype=torch.int8), torch.zeros(0, 1), 128, 1, torch.float16, alone, 0
    )
    assert torch.equal(got, alone.to(torch.float16))  # world size 1: the rank's own values, cast


@pytest.mark.usefixtures("isa")
def test_packed_skip_shard_leaves_it_out():
    x = _data(1000, torch.float32, seed=3)
    full = packed_ref(x, 128, 3)  # the reference wire format
    shard_bytes = 3 * 128 + 4 * 3  # shards 0 and 1 are full; shard 2 holds the last 232 elements
    for skip in range(3):
        skipped = torch.ops.atb_ops.quantize_int8_packed(x, 128, 3, False, skip)
        kept = [full[j * shard_bytes : (j + 1) * shard_bytes] for j in range(3) if j != skip]
        assert torch.equal(skipped, torch.cat(kept)), skip  # the others, back to back in rank order
    assert torch.ops.atb_ops.quantize_int8_packed(x, 128, 3, False, 5).shape == full.shape  # an empty shard


@pytest.mark.usefixtures("isa")
def test_opcheck_registered_ops():
    x = torch.randn(5, 70)
    q, scale = quant.quantize_int8(x, 32)
    torch.library.opcheck(torch.ops.atb_ops.quantize_int8, (x, 32, True))
    torch.library.opcheck(torch.ops.atb_ops.dequantize_int8, (q, scale, torch.bfloat16, 32))
    rows = torch.randint(-128, 128, (2, 64), dtype=torch.int8)
    torch.library.opcheck(torch.ops.atb_ops.dequantize_sum_int8, (rows, torch.rand(2, 4), 16, 4, torch.float16))
    packed = torch.ops.atb_ops.quantize_int8_packed(x, 32, 3, False)
    torch.library.opcheck(torch.ops.atb_ops.quantize_int8_packed, (x, 32, 3, False))
    torch.library.opcheck(torch.ops.atb_ops.quantize_int8_packed, (x, 32, 3, False, 1))
    torch.library.opcheck(torch.ops.atb_ops.dequantize_int8_packed, (packed, x.numel(), 32, 3, torch.float32))
    torch.library.opcheck(torch.ops.atb_ops.dequantize_sum_requantize_int8, (rows, torch.rand(2, 4), 16, 4, 32, 96))
    exact = torch.randn(64)
    torch.library.opcheck(
        torch.ops.atb_ops.dequantize_sum_int8, (rows, torch.rand(2, 4), 16, 4, torch.float32, exact, 1)
    )


def test_plan_shards_cover_the_tensor_in_whole_blocks():
    for numel, world_size, block_size in ((1, 4, 128), (1000, 3, 128), (10_007, 4, 100), (4096, 2, 128)):
        plan = quant.plan_all_reduce(numel, world_size, block_size)
        assert plan.shard == shard_elements(numel, world_size, block_size)
        assert plan.shard % block_size == 0
        covered = [plan.bounds(j) for j in range(world_size)]
        assert covered[0][0] == 0 and covered[-1][1] == numel
        assert all(a[1] == b[0] for a, b in zip(covered, covered[1:], strict=False))
        assert sum(plan.scales(j) for j in range(world_size)) == math.ceil(numel / block_size)


def test_bytes_against_fp16_all_reduce():
    """Bytes each rank sends per call vs a bandwidth-optimal fp16 all-reduce (2 (W-1)/W * 2 bytes per
    element): 0.5 + 2/block_size with the quantised all-gather (0.516 at 128; target <= 0.53)."""
    for world_size in (2, 4):
        numel = 16 << 20
        plan = quant.plan_all_reduce(numel, world_size, 128)
        fp16 = 2 * (world_size - 1) / world_size * numel * 2
        ratio_q = max(plan.bytes_sent(r, torch.float16, True) for r in range(world_size)) / fp16
        ratio_p = max(plan.bytes_sent(r, torch.float16, False) for r in range(world_size)) / fp16
        assert ratio_q == pytest.approx(0.5 + 2 / 128) and ratio_q <= 0.53
        assert ratio_p == pytest.approx(0.75 + 1 / 128)


# --- quantized_all_reduce on CPU ranks -------------------------------------------------------------

INT8_CASES = [
    Case("seed-[2,4]-per-tensor", "int8", (2, 4), torch.float16, scale="tensor", scale_dtype=torch.float16, seed=1),
    Case("per-channel-[7,33]", "int8", (7, 33), torch.float16, scale="channel", seed=2),
    Case(
        "per-channel-wide-[1,1000]",
        "int8",
        (1, 1000),
        torch.bfloat16,
        scale="channel",
        scale_dtype=torch.bfloat16,
        seed=3,
    ),
    Case("per-channel-1d-[5]", "int8", (5,), torch.float32, scale="channel", seed=4),
    Case("per-tensor-float-[3,300]-b64", "int8", (3, 300), torch.float32, block_size=64, scale="float", seed=5),
    Case(
        "per-channel-[129,17]-b100",
        "int8",
        (129, 17),
        torch.float16,
        block_size=100,
        scale="channel",
        scale_dtype=torch.float16,
        seed=6,
    ),
]
FLOAT_CASES = [
    Case("gauss-fp32-[256,256]", "float", (256, 256), torch.float32, seed=10),
    Case("gauss-fp32-[256,256]-qag", "float", (256, 256), torch.float32, quantize_allgather=True, seed=10),
    Case("gauss-fp16-[65536]", "float", (65536,), torch.float16, dtype=torch.float16, seed=11),
    # 4 MiB in, >= 1 MiB per rank in the all-gather: the large-message paths of the backends
    Case("gauss-fp32-[1048576]", "float", (1048576,), torch.float32, seed=22),
    Case("gauss-bf16-[1000,7]", "float", (1000, 7), torch.bfloat16, dtype=torch.bfloat16, magnitude=30.0, seed=12),
    Case("gauss-fp32-odd-[10007]-qag", "float", (10007,), torch.float16, quantize_allgather=True, seed=13),
    Case("zeros-[4096]", "float", (4096,), torch.float16, zeros=True, seed=14),
    Case("zeros-[4096]-qag", "float", (4096,), torch.float16, zeros=True, quantize_allgather=True, seed=14),
    Case("one-element", "float", (1,), torch.float32, seed=15),
    Case("block-1-[333]", "float", (333,), torch.float32, block_size=1, seed=16),
    Case(
        "int8-per-channel-qag-[64,48]",
        "int8",
        (64, 48),
        torch.float32,
        scale="channel",
        quantize_allgather=True,
        seed=17,
    ),
]
EMPTY_CASE = Case("empty", "float", (0, 4), torch.float16, seed=18)
NAN_CASES = [
    Case("nan-[1000]", "float", (1000,), torch.float32, poison=float("nan"), seed=19),
    Case("inf-[1000]", "float", (1000,), torch.float32, poison=float("inf"), seed=21),
    Case("inf-[1000]-qag", "float", (1000,), torch.float16, poison=float("inf"), quantize_allgather=True, seed=20),
]
ALL_CASES = INT8_CASES + FLOAT_CASES + [EMPTY_CASE] + NAN_CASES


def _inputs(case: Case, world_size: int):
    return [case_input(case, r, world_size) for r in range(world_size)]


def _bound(case: Case, first: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """Per-element worst-case |out - exact| given the reduce-scatter's bound `first` (module docstring)."""
    total = first
    if case.quantize_allgather:
        n, b = exact.numel(), case.block_size
        blocks = math.ceil(n / b)
        padded = torch.zeros(blocks * b, dtype=torch.float64)
        padded[:n] = exact.abs().reshape(-1) + first
        total = total + (padded.view(blocks, b).amax(1) / 254).repeat_interleave(b)[:n] * (1 + 2.0**-20)
    rounding = (exact.abs().reshape(-1) + total) * UNIT_ROUNDOFF[case.out_dtype] + SUBNORMAL_ROUNDOFF[case.out_dtype]
    return total + rounding


def _check(case: Case, world_size: int, outs: list[torch.Tensor]) -> dict:
    """Asserts every rank's output for `case`; returns the measured error for the report."""
    for r, out in enumerate(outs):
        assert out.shape == case.shape and out.dtype == case.out_dtype, (case.name, r, out.shape, out.dtype)
        torch.testing.assert_close(out, outs[0], rtol=0, atol=0, equal_nan=True, msg=f"{case.name}: rank {r} differs")
    out = outs[0]
    inputs = _inputs(case, world_size)
    xs = [x for x, _ in inputs]
    if case.kind == "int8" and not case.quantize_allgather:
        scales = [s if isinstance(s, torch.Tensor) else torch.tensor([s], dtype=torch.float32) for _, s in inputs]
        golden = int8_golden(xs, scales, case.out_dtype)
        assert torch.equal(out, golden), f"{case.name}: differs from the numpy golden"
        return {"case": case.name, "exact": True}
    if case.kind == "int8":  # quantize_allgather: the reduce-scatter is exact up to float32 rounding
        terms = [x.double() * (s.double() if isinstance(s, torch.Tensor) else s) for x, s in inputs]
        exact = sum(terms)
        first = sum(t.abs() for t in terms).reshape(-1) * 2.0**-22
    else:
        exact = sum(x.double() for x in xs)
        n, b = exact.numel(), case.block_size
        # Element i is reduced by the rank owning its shard; that rank's own term never is quantised.
        owner = torch.arange(n) // shard_elements(n, world_size, b) if n else torch.zeros(0)
        first = sum(x.double().abs() for x in xs).reshape(-1) * 2.0**-22  # float32 products and sum
        for r, x in enumerate(xs):
            _, scale = quantize_ref(x, b)
            rounding = scale.double().repeat_interleave(b)[:n] / 2  # s_r / 2 for the terms that travelled
            first = first + torch.where(owner == r, torch.zeros_like(rounding), rounding)
    bound = _bound(case, first, exact)
    flat_out, flat_exact = out.double().reshape(-1), exact.reshape(-1)
    if case.poison is not None:
        # A non-finite value that travels as int8 makes its whole block NaN; on the rank that reduces it
        # (its shard's owner) it stays one element, NaN or inf as IEEE arithmetic has it, unless the
        # quantised all-gather re-quantises that block.
        n, b = flat_out.numel(), case.block_size
        poisoner = world_size - 1
        travelled = POISON_INDEX // shard_elements(n, world_size, b) != poisoner
        poisoned = torch.zeros(n, dtype=torch.bool)
        if travelled or case.quantize_allgather:
            block = POISON_INDEX // b
            poisoned[block * b : (block + 1) * b] = True
            assert bool(torch.isnan(flat_out[poisoned]).all()), f"{case.name}: poisoned block is not NaN"
        else:
            poisoned[POISON_INDEX] = True
            got = float(flat_out[POISON_INDEX])
            assert math.isnan(got) if math.isnan(case.poison) else got == case.poison, (case.name, got)
        assert bool(torch.isfinite(flat_out[~poisoned]).all()), f"{case.name}: non-finite value leaked"
        flat_out, flat_exact, bound = flat_out[~poisoned], flat_exact[~poisoned], bound[~poisoned]
    err = (flat_out - flat_exact).abs()
    worst = int(torch.argmax(err - bound)) if err.numel() else 0
    assert bool((err <= bound).all()), (
        f"{case.name}: element {worst} off by {float(err[worst])}, bound {float(bound[worst])}"
    )
    if case.zeros:
        n = flat_exact.numel()
        assert bool((flat_out[: 2 * case.block_size] == 0).all()) and not bool(torch.isnan(flat_out).any())
        assert bool((flat_out[n // 2 : n // 2 + 3 * case.block_size] == 0).all())
    norm = float(torch.linalg.vector_norm(flat_exact))
    rel = float(torch.linalg.vector_norm(flat_out - flat_exact)) / norm if norm else 0.0
    if case.name.startswith("gauss"):
        limit = 0.02 if case.quantize_allgather else 0.01
        assert rel < limit, f"{case.name}: relative L2 error {rel:.4%} >= {limit:.0%}"
    return {"case": case.name, "rel_l2": rel}


@pytest.mark.parametrize("path", ["shm", "group"])
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_quantized_all_reduce(rank_pools, world_size, path, record_property):
    results = rank_pools(world_size).run(run_cases, path, ALL_CASES)
    report = []
    for i, case in enumerate(ALL_CASES):
        report.append(_check(case, world_size, [outs[i] for outs in results]))
    record_property("errors", report)
    print(f"\nworld_size={world_size} path={path}")
    for row in report:
        print("  ", row)


def test_quantized_all_reduce_on_subgroups(rank_pools):
    """Two 2-rank subgroups of a 4-rank job reduce independently (group ranks, not global ones, own shards)."""
    cases = [INT8_CASES[1], FLOAT_CASES[0], FLOAT_CASES[1]]
    results = rank_pools(4).run(subgroups, cases)
    for i, case in enumerate(cases):
        for members in ([0, 2], [1, 3]):
            _check(case, 2, [results[r][i] for r in members])


def test_quantized_all_reduce_bad_arguments_raise_before_communication(rank_pools):
    results = rank_pools(2).run(bad_arguments)
    for messages in results:
        assert messages[0].startswith("AtbError") and "scale is required" in messages[0]
        assert "got shape [5] for x of shape [4, 6]" in messages[1]
        assert "got torch.int32" in messages[2]
        assert "scale is only for an int8 x" in messages[3]
        assert "block_size must be a positive int, got 0" in messages[4]
        assert messages[5].startswith("TypeError") and "out_dtype" in messages[5]
        assert messages[6].startswith("TypeError") and "torch.int32" in messages[6]


def test_int8_golden_helper_matches_hand_computation():
    """The numpy golden itself, on numbers small enough to check by hand."""
    xs = [torch.tensor([[1, -2], [3, 4]], dtype=torch.int8), torch.tensor([[5, 6], [-7, 8]], dtype=torch.int8)]
    per_tensor = int8_golden(xs, [torch.tensor([0.5]), torch.tensor([0.25])], torch.float32)
    assert per_tensor.tolist() == [[1.75, 0.5], [-0.25, 4.0]]
    per_channel = int8_golden(xs, [torch.tensor([1.0, 2.0]), torch.tensor([0.5, 0.25])], torch.float32)
    assert np.allclose(per_channel.numpy(), [[3.5, -2.5], [-0.5, 10.0]])


def test_bench_quant_allreduce_runs_and_meets_the_byte_target(tmp_path, capsys):
    """`python -m atb_ops bench --op quant_allreduce` end to end on 2 CPU ranks, tiny sizes (no timing
    assertions: only that it runs, reports every variant, and its bytes and errors are as documented)."""
    from atb_ops.__main__ import main

    out = tmp_path / "bench.json"
    argv = ["bench", "--op", "quant_allreduce", "--sizes", "256K", "--warmup", "0", "--iters", "1", "--rounds", "1"]
    assert main([*argv, "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "quant int8, gather int8" in table and "all_reduce fp32 (gloo)" in table
    header = next(line.split() for line in table.splitlines() if not line.startswith("#") and "variant" in line)
    assert header[:3] == ["size", "count", "type"], header  # nccl-tests' columns first, as every bench
    assert all(c in header for c in ("time(us)", "algbw", "busbw", "#wrong")), header
    assert "# Out of bounds values : 0 OK" in table
    _check_quant_bench_rows(json.loads(out.read_text())["rows"])


def test_bench_quant_allreduce_takes_the_common_flags(tmp_path, capsys):
    """One CLI for every --op: --backend (the atb_ops fp32 row's), --no-gloo (its rows and ratios left out),
    --no-mpi (accepted: no MPI column here) and --plot work as on the collectives bench."""
    from atb_ops.__main__ import main

    out, png = tmp_path / "bench.json", tmp_path / "quant.png"
    argv = ["bench", "--op", "quant_allreduce", "--sizes", "64K", "--warmup", "0", "--iters", "1", "--rounds", "1",
            "--backend", "shm", "--no-gloo", "--no-mpi", "--plot", str(png), "--json", str(out)]
    assert main(argv) == 0
    assert "all_reduce fp32 (gloo)" not in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["backend"] == "shm"
    rows = doc["rows"]
    assert [r["variant"] for r in rows] == ["atb_ops AllReduce fp32", "quant int8, gather float16",
                                            "quant int8, gather int8"]
    assert all(r["wrong"] == 0 and r["speedup_vs_fp32"] is None and r["type"] == "float32" for r in rows), rows
    assert png.stat().st_size > 0


def _check_quant_bench_rows(rows: list[dict]) -> None:
    """Every variant reported once, with the bytes and errors docs/quant.md gives (no timing assertions), none past
    its bound, and nccl-tests' bandwidths (busbw = algbw * 2(n-1)/n for 2 ranks)."""
    by_variant = {r["variant"]: r for r in rows}
    assert len(by_variant) == 5 == len(rows)
    assert all(r["wrong"] == 0 for r in rows), rows
    assert all(r["algbw"] > 0 and r["busbw"] == pytest.approx(r["algbw"]) for r in rows), rows
    assert by_variant["quant int8, gather int8"]["bytes_vs_fp16"] <= 0.53
    assert by_variant["quant int8, gather float16"]["bytes_vs_fp16"] < 0.77
    assert by_variant["quant int8, gather float16"]["rel_err"] < 0.01
    assert by_variant["quant int8, gather int8"]["rel_err"] < 0.02
    assert by_variant["all_reduce fp32 (gloo)"]["rel_err"] < 1e-6
    assert by_variant["atb_ops AllReduce fp32"]["rel_err"] < 1e-6  # ATB's AllReduceOperation, float32
    assert all(r["speedup_vs_atb_fp32"] > 0 for r in rows)


_hosts_why = emulated_hosts.available(shaping=True)


@pytest.mark.skipif(_hosts_why is not None, reason=f"emulated hosts unavailable: {_hosts_why}")
def test_bench_quant_allreduce_across_emulated_hosts(tmp_path, capsys):
    """--hosts 2 --link-rate: the int8 all-reduce's ranks on 2 shaped emulated hosts (host by host), every
    variant's errors as on one host, and the title gives the float32 all-reduce's link limit per size:
    2 x (2-1)/2 x 256 KiB at 1 Gbit/s (125e6 B/s) = 2.1 ms."""
    from atb_ops.__main__ import main

    out = tmp_path / "bench.json"
    argv = ["bench", "--op", "quant_allreduce", "--world-size", "2", "--hosts", "2", "--link-rate", "1gbit",
            "--sizes", "256K", "--warmup", "0", "--iters", "1", "--rounds", "1", "--json", str(out)]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "2 emulated hosts x 1 ranks, host by host; link 1gbit" in table
    assert "256 KiB 2.1 ms" in table
    doc = json.loads(out.read_text())
    assert doc["hosts"] == 2 and doc["link_rate"] == "1gbit"
    _check_quant_bench_rows(doc["rows"])


@pytest.mark.parametrize(("extra", "message"), [
    (["--link-rate", "1gbit"], "give --hosts too"),
    (["--hosts", "3"], "divide --world-size"),
    (["--hosts", "2", "--path", "shm"], "--path shm keeps every rank on one host"),
])
def test_bench_quant_allreduce_hosts_arguments_are_checked(extra, message):
    """Bad --hosts / --link-rate / --path combinations stop with argparse's status 2, before any rank starts."""
    proc = subprocess.run([sys.executable, "-m", "atb_ops", "bench", "--op", "quant_allreduce", *extra],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
