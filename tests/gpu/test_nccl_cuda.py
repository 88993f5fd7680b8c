"""The real NCCL backend on one GPU (world size 1), through ATB's torch binding.

Skipped, with the reason, where there is no CUDA device or this atb_ops was built without the NCCL
backend (CPU torch): the logic is covered on CPU by test_nccl_mock.py, and the NCCL translation units are
compiled against the real nccl.h by scripts/compile_check_nccl.sh. Every output is pre-filled with a
sentinel that differs from the expected value at every element, so an element NCCL did not write fails.
"""

from __future__ import annotations

import json

import pytest
import torch

import atb_ops

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="needs a CUDA device (torch.cuda.is_available() is False)"),
    # backends() names each with its device ("nccl (cuda)"); a bare "nccl" was never in it, so this file skipped
    # even on a GPU (found on the first GPU run).
    pytest.mark.skipif("nccl (cuda)" not in atb_ops.backends(),
                       reason=f"atb_ops was built without the NCCL backend (built: {atb_ops.backends()})"),
]

DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.uint8, torch.bool, torch.float64]


def data(n: int, dtype: torch.dtype) -> torch.Tensor:
    """Small exact values on the GPU (exactly representable in every dtype)."""
    values = torch.arange(n, device="cuda") % 50
    return (values % 2 == 1) if dtype == torch.bool else values.to(dtype)


def sentinel_like(expected: torch.Tensor) -> torch.Tensor:
    """A buffer that differs from `expected` at every element."""
    return ~expected if expected.dtype == torch.bool else (expected + 1).to(expected.dtype)


def operation(name: str, **param: object) -> torch.ScriptObject:
    op = torch.classes.OperationTorch.OperationTorch(name)
    # One commDomain for the whole module: later operations reuse the cached communicator.
    full = {"rank": 0, "rankSize": 1, "rankRoot": 0, "backend": "nccl", "commDomain": "nccl-cuda-tests"}
    full.update(param)
    assert json.loads(op.set_param(json.dumps(full))) == {"result": 0}
    return op


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_alltoallvv2_execute_out_world_one(dtype: torch.dtype) -> None:
    x = data(40, dtype)
    # One rank: it sends itself 17 elements starting at element 5.
    counts = {"sendCounts": [17], "sdispls": [5], "recvCounts": [17], "rdispls": [0]}
    op = operation("AllToAllVV2Operation")
    expected = x[5:22].reshape(1, 17)
    out = sentinel_like(expected)
    count_tensors = [torch.tensor(counts[k], dtype=torch.int64) for k in ("sendCounts", "sdispls", "recvCounts",
                                                                         "rdispls")]
    op.execute_out([x, *count_tensors, torch.empty(17, device="cuda")], [out])
    torch.cuda.synchronize()
    assert torch.equal(out, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_alltoallvv2_execute_world_one(dtype: torch.dtype) -> None:
    x = data(12, dtype).reshape(3, 4)
    op = operation("AllToAllVV2Operation")
    op.set_varaintpack_param(json.dumps({"sendCounts": [12], "sdispls": [0], "recvCounts": [12], "rdispls": [0]}))
    (out,) = op.execute([x, torch.empty(12, device="cuda")])
    torch.cuda.synchronize()
    assert out.shape == (1, 12) and out.device == x.device
    assert torch.equal(out, x.reshape(1, 12))


def test_hccl_param_on_cuda_tensors_runs_on_nccl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATB_OPS_STRICT_BACKEND", raising=False)
    x = data(6, torch.float32)
    op = operation("AllToAllVV2Operation", backend="hccl")  # an unchanged ATB script
    op.set_varaintpack_param(json.dumps({"sendCounts": [6], "sdispls": [0], "recvCounts": [6], "rdispls": [0]}))
    (out,) = op.execute([x, torch.empty(6, device="cuda")])
    torch.cuda.synchronize()
    assert torch.equal(out, x.reshape(1, 6))


def test_alltoallvv2_receiving_nothing_world_one() -> None:
    x = data(8, torch.float32)
    op = operation("AllToAllVV2Operation")
    op.set_varaintpack_param(json.dumps({"sendCounts": [0], "sdispls": [0], "recvCounts": [0], "rdispls": [0]}))
    (out,) = op.execute([x, torch.empty(0, device="cuda")])
    assert out.shape == (1, 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_allgather_execute_out_world_one(dtype: torch.dtype) -> None:
    x = data(24, dtype).reshape(2, 3, 4)
    op = operation("AllGatherOperation")
    expected = x.unsqueeze(0)
    out = sentinel_like(expected)
    op.execute_out([x], [out])
    torch.cuda.synchronize()
    assert torch.equal(out, expected)


def test_adopted_comm_from_torch_process_group_world_one() -> None:
    import torch.distributed as dist

    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1,
                            device_id=torch.device("cuda", torch.cuda.current_device()))
    try:
        backend = dist.group.WORLD._get_backend(torch.device("cuda"))
        if not hasattr(backend, "_comm_ptr"):
            pytest.skip("this torch's ProcessGroupNCCL exposes no _comm_ptr() to adopt")
        dist.barrier()  # makes ProcessGroupNCCL create its communicator
        handle = backend._comm_ptr()
        x = data(10, torch.float32)
        op = operation("AllToAllVV2Operation", hcclComm=handle)
        op.set_varaintpack_param(json.dumps({"sendCounts": [4], "sdispls": [6], "recvCounts": [4], "rdispls": [0]}))
        (out,) = op.execute([x, torch.empty(4, device="cuda")])
        torch.cuda.synchronize()
        assert torch.equal(out, x[6:10].reshape(1, 4))
        atb_ops.clear_communicators()  # drops our wrapper; the process group still owns and uses its comm
        dist.barrier()
    finally:
        dist.destroy_process_group()
