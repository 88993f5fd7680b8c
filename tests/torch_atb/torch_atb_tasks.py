"""torch_atb functions that run inside the ranks of a RankPool (importable by module path)."""

from __future__ import annotations

import torch

from atb_ops import torch_atb
from tests.support.backends import use_backend
from tests.support.golden import DTYPES


def all_gather(rank: int, world_size: int, backend: str, dtype_name: str, seed: int) -> list[bytes]:
    """torch_atb AllGather of rank-seeded data; returns [output bytes, golden bytes] and checks the API."""
    use_backend(backend)  # "hccl": HCCL's C API on CPU, really selected in this rank
    gen = torch.Generator().manual_seed(seed)
    inputs = [(torch.rand(2, 3, generator=gen) * 100).to(DTYPES[dtype_name]) for _ in range(world_size)]
    param = torch_atb.AllGatherParam(rank=rank, rank_size=world_size, backend=backend,
                                     comm_domain=f"torch_atb-{backend}")
    op = torch_atb.Operation(param)
    param.rank_size = world_size + 1  # the operation keeps the param it was made with
    (out,) = op.forward([inputs[rank]])
    assert out.shape == (world_size, 2, 3) and out.dtype == DTYPES[dtype_name]
    import atb_ops

    # The backend torch_atb asked for is the one that ran ("lccl" runs as "hccl").
    (stats,) = atb_ops._C.communicator_stats(f"torch_atb-{backend}")
    assert stats["backend"] == ("hccl" if backend == "lccl" else backend), stats
    golden = torch.stack(inputs)
    return [out.contiguous().view(torch.uint8).numpy().tobytes(), golden.view(torch.uint8).numpy().tobytes()]


def all_to_all(rank: int, world_size: int, transpose: bool) -> dict:
    """AllToAll through torch_atb on ATB's own backend (HCCL's C API on CPU, selected in this rank); returns the
    output and a plain-torch golden of ATB's semantics, computed here from every rank's input."""
    backend = "lccl" if transpose else "hccl"  # ATB's transpose is an lccl mode
    use_backend(backend)
    # lccl's commDomain is a number (ATB's rule); hccl takes any name.
    param = torch_atb.AllToAllParam(
        rank=rank, rank_size=world_size, backend=backend, transpose=transpose, comm_domain="7"
    )
    rows, cols = 2 * world_size, 2 * world_size
    xs = [torch.arange(rows * cols, dtype=torch.float32).reshape(rows, cols) + 1000 * r for r in range(world_size)]
    (out,) = torch_atb.Operation(param).forward([xs[rank]])
    if transpose:
        # Column block `rank` of every rank's x, stacked in rank order.
        block = cols // world_size
        golden = torch.cat([x[:, rank * block : (rank + 1) * block] for x in xs])
    else:
        # Chunk `rank` of every rank's flattened x, in rank order, in x's shape.
        chunk = rows * cols // world_size
        golden = torch.cat([x.reshape(-1)[rank * chunk : (rank + 1) * chunk] for x in xs]).reshape(rows, cols)
    return {"out": (tuple(out.shape), out.reshape(-1).tolist()),
            "golden": (tuple(golden.shape), golden.reshape(-1).tolist())}
