"""What the benchmarks of the collectives other than alltoallv move (``--op allreduce``, ``reduce_scatter``,
``allgather``, ``broadcast``), and what each rank must hold afterwards.

Rank r's input element i is ``((STEP * i + 7 * r) mod 13) - 6``: small integers, so a sum over up to 16 ranks
is exact in every numeric dtype (int8 included: |sum| <= 96), and every expected output is computed here,
in int64, independently of any library. Sizes follow nccl-tests: ``size`` is the bytes of a rank's input for
allreduce, reduce_scatter (it receives 1/n of them reduced) and broadcast, and of a rank's output for
allgather (it sends 1/n of them).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from atb_ops.bench import workload

REDUCIBLE = (  # the dtypes with a sum here (--op allreduce and reduce_scatter need one)
    "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "uint8")
ROOT = 0  # broadcast's source rank
STEP = 5
MODULUS = 13


def shapes(op: str, size: int, world_size: int, dtype: torch.dtype) -> tuple[int, int]:
    """(input elements, output elements) of one rank for a `size`-byte row of the table."""
    count = max(size // workload.element_size(dtype), 0)
    share = count // world_size
    if op == "reduce_scatter":
        return share * world_size, share
    if op == "allgather":
        return share, share * world_size
    return count, count


def reported(op: str, numel_in: int, numel_out: int) -> int:
    """The elements a row reports: the output's for allgather, the input's otherwise."""
    return numel_out if op == "allgather" else numel_in


def values(numel: int, rank: int, dtype: torch.dtype) -> torch.Tensor:
    """Rank `rank`'s input: small integers in [-6, 6] ([0, 12] for uint8; odd or even for bool), as `dtype`."""
    v = (torch.arange(numel, dtype=torch.int64) * STEP + 7 * rank) % MODULUS
    if dtype == torch.bool:
        return v % 2 == 1
    if dtype != torch.uint8:
        v -= MODULUS // 2
    return v.to(dtype)


def expected(op: str, numel_in: int, rank: int, world_size: int, dtype: torch.dtype) -> torch.Tensor:
    """What rank `rank` must hold afterwards (flattened), from the inputs alone."""
    if op == "broadcast":
        return values(numel_in, ROOT, dtype)
    if op == "allgather":
        return torch.cat([values(numel_in, r, dtype) for r in range(world_size)])
    total = sum(values(numel_in, r, dtype).to(torch.int64) for r in range(world_size))
    if op == "reduce_scatter":
        chunk = numel_in // world_size
        total = total[rank * chunk : (rank + 1) * chunk]
    return total.to(dtype)


def count_wrong(got: torch.Tensor, want: torch.Tensor) -> int:
    """Elements of `got` that differ from `want` (outputs start as a sentinel, so unwritten ones count)."""
    return int((got.reshape(-1).cpu() != want.reshape(-1)).sum())


@dataclass
class RankData:
    """One rank's side of one size: its element counts, its input and what it must hold afterwards."""

    numel_in: int
    numel_out: int
    mine: torch.Tensor  # this rank's input (values())
    want: torch.Tensor  # expected(), flattened


def rank_data(op: str, size: int, rank: int, world_size: int, dtype: torch.dtype) -> RankData:
    """What rank `rank` starts from and must end with in a `size`-byte row of `op`, on the CPU.

    Args:
        op: allreduce, reduce_scatter, allgather or broadcast.
        size: the row's size in bytes (nccl-tests' convention: see shapes).
        rank: whose data.
        world_size: all ranks.
        dtype: the element type.

    Returns:
        Input and output element counts, the input, and the expected output.
    """
    numel_in, numel_out = shapes(op, size, world_size, dtype)
    return RankData(numel_in, numel_out, values(numel_in, rank, dtype),
                    expected(op, numel_in, rank, world_size, dtype))
