"""What the reduction benchmarks (``--op allreduce`` and ``--op reduce_scatter``) move, and what they expect.

Rank r's input element i is ``((STEP * i + 7 * r) mod 13) - 6``: small integers, so a sum over up to 16 ranks
is exact in every numeric dtype (int8 included: |sum| <= 96) and the expected output is computed here, in
int64, independently of any library. Sizes follow nccl-tests: for allreduce ``size`` is the bytes of the
input (= output) of a rank; for reduce_scatter the bytes of a rank's input, whose 1/n-th it receives.
"""

from __future__ import annotations

import torch

from atb_ops.bench import workload

OPS = ("alltoallv", "allreduce", "reduce_scatter")
STEP = 5
MODULUS = 13
REDUCIBLE = ("int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "uint8")


def bus_factor(op: str, world_size: int) -> float:
    """nccl-tests' busbw / algbw: the share of the data that crosses between ranks, per algorithm."""
    if world_size <= 1:
        return 0.0
    if op == "allreduce":
        return 2.0 * (world_size - 1) / world_size
    return (world_size - 1) / world_size


def shapes(op: str, size: int, world_size: int, dtype: torch.dtype) -> tuple[int, int]:
    """(input elements, output elements) of one rank for a `size`-byte row of the table."""
    count = max(size // workload.element_size(dtype), 0)
    if op == "allreduce":
        return count, count
    per_rank = count // world_size
    return per_rank * world_size, per_rank


def values(numel: int, rank: int, dtype: torch.dtype) -> torch.Tensor:
    """Rank `rank`'s input: small integers in [-6, 6] (in [0, 12] for uint8), as `dtype`."""
    v = (torch.arange(numel, dtype=torch.int64) * STEP + 7 * rank) % MODULUS
    if dtype != torch.uint8:
        v -= MODULUS // 2
    return v.to(dtype)


def expected(op: str, numel: int, rank: int, world_size: int, dtype: torch.dtype) -> torch.Tensor:
    """What rank `rank` must hold after the call: the sum over ranks (of its chunk, for reduce_scatter)."""
    total = sum(values(numel, r, dtype).to(torch.int64) for r in range(world_size))
    if op == "reduce_scatter":
        chunk = numel // world_size
        total = total[rank * chunk : (rank + 1) * chunk]
    return total.to(dtype)


def count_wrong(got: torch.Tensor, want: torch.Tensor) -> int:
    """Elements of `got` that differ from `want` (outputs start as a sentinel, so unwritten ones count)."""
    return int((got.reshape(-1).cpu() != want.reshape(-1)).sum())
