"""Functions that run inside the ranks of a RankPool (they must be importable by module path)."""

from __future__ import annotations

import json

import torch

from tests.support.backends import use_backend
from tests.support.golden import DTYPES, SENTINEL_BYTE


def _tensor(raw: bytes, dtype_name: str, shape: tuple[int, ...]) -> torch.Tensor:
    if not raw:
        return torch.empty(shape, dtype=DTYPES[dtype_name])
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(DTYPES[dtype_name]).reshape(shape)


def _noncontiguous(x: torch.Tensor) -> torch.Tensor:
    """The same values as x flattened, as every other element of a buffer twice as long (stride 2): never
    contiguous once it holds two elements."""
    flat = x.reshape(-1)
    big = torch.empty(flat.numel(), 2, dtype=flat.dtype)
    big[:, 0] = flat
    strided = big[:, 0]
    assert flat.numel() < 2 or not strided.is_contiguous(), strided.stride()
    return strided


def run_alltoallvv2(
    rank: int,
    world_size: int,
    backend: str,
    dtype_name: str,
    mode: str,
    comm_domain: str,
    payload: bytes,
    shape: tuple[int, ...],
    send_counts: list[int],
    sdispls: list[int],
    recv_counts: list[int],
    rdispls: list[int],
) -> bytes:
    """One AllToAllVV2Operation through the ATB surface; returns the output's raw bytes.

    mode: "execute" (count tensors), "pack" (set_varaintpack_param, 2 inputs), "out" (execute_out into a
    sentinel-filled output), "noncontig" (x not contiguous), "both" (tensors and an agreeing pack).
    """
    use_backend(backend)
    op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
    op.set_param(
        json.dumps({"rank": rank, "rankSize": world_size, "rankRoot": 0, "backend": backend, "commDomain": comm_domain})
    )
    x = _tensor(payload, dtype_name, shape)
    if mode == "noncontig":
        x = _noncontiguous(x)
    counts = [torch.tensor(v, dtype=torch.int64) for v in (send_counts, sdispls, recv_counts, rdispls)]
    total = sum(recv_counts)
    infer = torch.zeros(total, dtype=torch.int8)
    if mode in ("pack", "both"):
        op.set_varaintpack_param(
            json.dumps({"sendCounts": send_counts, "sdispls": sdispls, "recvCounts": recv_counts, "rdispls": rdispls})
        )
    if mode == "pack":
        (out,) = op.execute([x, infer])
    elif mode == "out":
        out = torch.empty((1, total), dtype=x.dtype)
        out.reshape(-1).view(torch.uint8).fill_(SENTINEL_BYTE)
        op.execute_out([x, *counts, infer], [out])
    else:
        (out,) = op.execute([x, *counts, infer])
    assert out.shape == (1, total), f"output shape {tuple(out.shape)} != (1, {total})"
    assert out.dtype == x.dtype
    return out.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def run_allgather(
    rank: int, world_size: int, backend: str, dtype_name: str, payload: bytes, shape: tuple[int, ...], use_out: bool
) -> bytes:
    use_backend(backend)
    op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend}))
    x = _tensor(payload, dtype_name, shape)
    if use_out:
        out = torch.empty((world_size, *shape), dtype=x.dtype)
        out.reshape(-1).view(torch.uint8).fill_(SENTINEL_BYTE)
        op.execute_out([x], [out])
    else:
        (out,) = op.execute([x])
    assert tuple(out.shape) == (world_size, *shape)
    return out.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def run_alltoall(
    rank: int, world_size: int, backend: str, dtype_name: str, payload: bytes, shape: tuple[int, ...]
) -> bytes:
    use_backend(backend)
    op = torch.classes.OperationTorch.OperationTorch("AllToAllOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend}))
    (out,) = op.execute([_tensor(payload, dtype_name, shape)])
    assert tuple(out.shape) == tuple(shape)
    return out.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def run_seed_004(rank: int, world_size: int, backend: str, dtype_name: str) -> list:
    """Seed 004's example verbatim: the ATB test's inputs, counts given as tensors and as a pack."""
    dtype = DTYPES[dtype_name]
    inputs = [
        torch.tensor([[0, 1, 2, 3], [4, 5, 6, 7]], dtype=dtype),
        torch.tensor([[0, 1, 2], [3, 4, 6]], dtype=dtype),
    ]
    sendcount = [[2, 4], [2, 1]]
    senddisp = [[0, 2], [0, 2]]
    recvout = [[2, 2], [4, 1]]
    recvdis = [[0, 2], [0, 4]]
    use_backend(backend)
    op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
    result = op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "rankRoot": 0, "backend": backend}))
    assert json.loads(result) == {"result": 0}
    op.set_varaintpack_param(
        json.dumps(
            {
                "sendCounts": sendcount[rank],
                "sdispls": senddisp[rank],
                "recvCounts": recvout[rank],
                "rdispls": recvdis[rank],
            }
        )
    )
    host = [torch.tensor(v[rank], dtype=torch.int64) for v in (sendcount, senddisp, recvout, recvdis)]
    infer = torch.full((sum(recvout[rank]),), 3, dtype=torch.int8)
    (out,) = op.execute([inputs[rank], *host, infer])
    return [str(out.dtype), list(out.shape), out.to(torch.float64).tolist()]


def run_one_element_strided(rank: int, world_size: int, backend: str, big: int) -> list[float]:
    """Rank 0 sends one element from a stride-2 view to rank 1, which receives it into a stride-2 one-element
    output through execute_out; rank 1 sends `big` floats to rank 0. Returns what this rank received."""
    use_backend(backend)
    op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend, "commDomain": "one-element"}))
    if rank == 0:
        x = torch.tensor([7.0, 99.0])[::2]
        layout = [[0, 1], [0, 0], [0, big], [0, 0]]
        out = torch.full((1, big), -1.0)
    else:
        x = torch.arange(big, dtype=torch.float32) + 0.5
        layout = [[big, 0], [0, 0], [1, 0], [0, 0]]
        out = torch.full((1, 2), -1.0)[:, ::2]
    counts = [torch.tensor(v, dtype=torch.int64) for v in layout]
    op.execute_out([x, *counts, torch.zeros(out.shape[1], dtype=torch.int8)], [out])
    return out.reshape(-1).tolist()
