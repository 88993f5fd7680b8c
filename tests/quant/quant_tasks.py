"""Cases and rank-side functions for tests/quant/test_quant.py (run inside a RankPool's ranks).

Every input is a function of (case, rank), so the test process rebuilds all ranks' inputs to compute
the golden sum without moving them through the pool.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from atb_ops import quant
from tests.support.environment import cpu_path


@dataclass(frozen=True)
class Case:
    """One quantized_all_reduce call, the same on every rank.

    kind "int8": x int8 in [-128, 127] with a per-rank scale: scale "tensor" (a one-element tensor),
    "channel" ([shape[-1]]), or "float" (a Python float). kind "float": Gaussian x of `dtype` times
    `magnitude`, with optional zero stripes (`zeros`) or one non-finite value on the last rank (`poison`).
    """

    name: str
    kind: str
    shape: tuple[int, ...]
    out_dtype: torch.dtype = torch.float16
    block_size: int = 128
    quantize_allgather: bool = False
    dtype: torch.dtype = torch.float32
    scale: str = "tensor"
    scale_dtype: torch.dtype = torch.float32
    magnitude: float = 1.0
    zeros: bool = False
    poison: float | None = None  # NaN or inf put at flat index POISON_INDEX on the last rank
    seed: int = 0


POISON_INDEX = 300


def case_input(case: Case, rank: int, world_size: int) -> tuple[torch.Tensor, torch.Tensor | float | None]:
    """Rank `rank`'s (x, scale) for `case`."""
    g = torch.Generator().manual_seed(case.seed * 1009 + rank)
    if case.kind == "int8":
        x = torch.randint(-128, 128, case.shape, generator=g, dtype=torch.int8)
        channels = case.shape[-1] if case.shape else 1
        if case.scale == "float":
            scale: torch.Tensor | float | None = 0.01 * (rank + 1) + 0.001
        elif case.scale == "tensor":
            scale = (torch.rand(1, generator=g) * 0.1 + 0.001).to(case.scale_dtype)
        else:
            scale = (torch.rand(channels, generator=g) * 0.1 + 0.001).to(case.scale_dtype)
        return x, scale
    x = torch.randn(case.shape, generator=g, dtype=torch.float64) * case.magnitude
    flat = x.view(-1)
    if case.zeros:
        n = flat.numel()
        flat[: min(n, 2 * case.block_size)] = 0  # whole blocks of zeros on every rank
        flat[n // 2 : n // 2 + 3 * case.block_size] = 0
        if rank == 0:
            flat[-case.block_size :] = 0  # zeros on one rank only
    if case.poison is not None and rank == world_size - 1:
        flat[POISON_INDEX] = case.poison
    return x.to(case.dtype), None


def run_cases(rank: int, world_size: int, path: str, cases: list[Case]) -> list[torch.Tensor]:
    """quantized_all_reduce of every case on this rank, in order; returns the outputs."""
    outs = []
    with cpu_path(path):
        for case in cases:
            x, scale = case_input(case, rank, world_size)
            outs.append(
                quant.quantized_all_reduce(
                    x,
                    scale=scale,
                    block_size=case.block_size,
                    out_dtype=case.out_dtype,
                    quantize_allgather=case.quantize_allgather,
                )
            )
    return outs


def bad_arguments(rank: int, world_size: int) -> list[str]:
    """Each bad call raises on this rank before any communication; returns 'Type: message' per call."""
    x8 = torch.zeros(4, 6, dtype=torch.int8)
    xf = torch.zeros(4, 6)
    calls = [
        lambda: quant.quantized_all_reduce(x8),  # int8 without scale
        lambda: quant.quantized_all_reduce(x8, scale=torch.ones(5)),  # wrong channel count
        lambda: quant.quantized_all_reduce(x8, scale=torch.ones(1, dtype=torch.int32)),  # integer scale
        lambda: quant.quantized_all_reduce(xf, scale=1.0),  # scale with a floating x
        lambda: quant.quantized_all_reduce(xf, block_size=0),
        lambda: quant.quantized_all_reduce(xf, out_dtype=torch.int8),
        lambda: quant.quantized_all_reduce(xf.to(torch.int32)),
    ]
    messages = []
    for call in calls:
        try:
            call()
        except (TypeError, ValueError) as e:
            messages.append(f"{type(e).__name__}: {e}")
        else:
            messages.append("no error")
    return messages


def subgroups(rank: int, world_size: int, cases: list[Case]) -> list[torch.Tensor]:
    """quantized_all_reduce over two subgroups, {even ranks} and {odd ranks}, every case."""
    import torch.distributed as dist

    evens = dist.new_group(list(range(0, world_size, 2)))
    odds = dist.new_group(list(range(1, world_size, 2)))
    group = evens if rank % 2 == 0 else odds
    outs = []
    for case in cases:
        x, scale = case_input(case, dist.get_rank(group), dist.get_world_size(group))
        outs.append(
            quant.quantized_all_reduce(
                x,
                group,
                scale=scale,
                block_size=case.block_size,
                out_dtype=case.out_dtype,
                quantize_allgather=case.quantize_allgather,
            )
        )
    return outs
