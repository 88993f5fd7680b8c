"""torch_atb functions that run inside the ranks of a RankPool (importable by module path)."""

from __future__ import annotations

import json

import torch

from atb_ops import torch_atb
from tests.golden import DTYPES


def all_gather(rank: int, world_size: int, backend: str, dtype_name: str, seed: int) -> list[bytes]:
    """torch_atb AllGather of rank-seeded data; returns [output bytes, golden bytes] and checks the API."""
    gen = torch.Generator().manual_seed(seed)
    inputs = [(torch.rand(2, 3, generator=gen) * 100).to(DTYPES[dtype_name]) for _ in range(world_size)]
    param = torch_atb.AllGatherParam(rank=rank, rank_size=world_size, backend=backend, comm_domain="torch_atb")
    op = torch_atb.Operation(param)
    param.rank_size = world_size + 1  # the operation keeps the param it was made with
    (out,) = op.forward([inputs[rank]])
    assert out.shape == (world_size, 2, 3) and out.dtype == DTYPES[dtype_name]
    golden = torch.stack(inputs)
    return [out.contiguous().view(torch.uint8).numpy().tobytes(), golden.view(torch.uint8).numpy().tobytes()]


def all_to_all_both_surfaces(rank: int, world_size: int, transpose: bool) -> dict:
    """AllToAll through torch_atb and through OperationTorch with the same JSON; returns both outputs."""
    backend = "lccl" if transpose else "hccl"  # ATB's transpose is an lccl mode
    # lccl's commDomain is a number (ATB's rule); hccl takes any name.
    param = torch_atb.AllToAllParam(
        rank=rank, rank_size=world_size, backend=backend, transpose=transpose, comm_domain="7"
    )
    x = torch.arange(4 * world_size * world_size, dtype=torch.float32).reshape(2 * world_size, 2 * world_size)
    x = x + 1000 * rank
    op = torch_atb.Operation(param)
    via_torch_atb = op.forward([x])[0]
    direct = torch.classes.OperationTorch.OperationTorch("AllToAllOperation")
    direct.set_param(json.dumps(param.to_json()))
    via_operation_torch = direct.execute([x])[0]
    return {
        "torch_atb": (tuple(via_torch_atb.shape), via_torch_atb.reshape(-1).tolist()),
        "operation_torch": (tuple(via_operation_torch.shape), via_operation_torch.reshape(-1).tolist()),
    }
