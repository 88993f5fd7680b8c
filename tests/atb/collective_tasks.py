"""Rank-side code of tests/atb/test_collectives.py: run one ATB operator on this rank's inputs, return the outputs.

Everything travels as raw bytes (dtype name, shape), so the test process computes goldens from exactly the
values the ranks used, and compares every element, bit for bit where nothing is computed.
"""

from __future__ import annotations

import json

import torch

from tests.support.backends import use_backend
from tests.support.golden import DTYPES, SENTINEL_BYTE

Spec = tuple[bytes, str, tuple[int, ...]]  # raw bytes, dtype name, shape


def tensor_of(spec: Spec) -> torch.Tensor:
    raw, dtype_name, shape = spec
    if not raw:
        return torch.empty(shape, dtype=DTYPES[dtype_name])
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(DTYPES[dtype_name]).reshape(shape).clone()


def spec_of(t: torch.Tensor) -> Spec:
    name = next(k for k, v in DTYPES.items() if v == t.dtype)
    return t.contiguous().view(-1).view(torch.uint8).numpy().tobytes(), name, tuple(t.shape)


def sentinel_like(dtype_name: str, shape: tuple[int, ...]) -> torch.Tensor:
    """An output buffer every byte of which holds the sentinel, so an element nobody wrote shows."""
    numel = 1
    for s in shape:
        numel *= s
    size = torch.empty(0, dtype=DTYPES[dtype_name]).element_size()
    return torch.full((numel * size,), SENTINEL_BYTE, dtype=torch.uint8).view(DTYPES[dtype_name]).reshape(shape)


def make_operation(op_name: str, binding: str):
    """The operator through one of its two Python doors (the same C++ object behind both)."""
    import atb_ops

    if binding == "pybind":
        return atb_ops.Operation(op_name)
    assert binding == "torchscript", binding
    return torch.classes.OperationTorch.OperationTorch(op_name)


def run_op(
    rank: int,
    world_size: int,
    op_name: str,
    backend: str,
    param: dict,
    pack: dict | None,
    inputs: list[Spec],
    out_specs: list[tuple[str, tuple[int, ...]]] | None,
    binding: str = "torchscript",
) -> dict:
    """Runs op_name once. out_specs None: execute(); else execute_out() into sentinel-filled buffers.
    binding: "torchscript" (torch.classes.OperationTorch.OperationTorch) or "pybind" (atb_ops.Operation).

    Returns {"outputs": [Spec], "inputs": [Spec] after the call (Broadcast writes its input)}.
    """
    use_backend(backend)
    op = make_operation(op_name, binding)
    result = op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend, **param}))
    assert json.loads(result) == {"result": 0}, result
    if pack is not None:
        op.set_varaintpack_param(json.dumps(pack))
    tensors = [tensor_of(s) for s in inputs]
    if out_specs is None:
        outputs = op.execute(tensors)
    else:
        outputs = [sentinel_like(name, shape) for name, shape in out_specs]
        op.execute_out(tensors, outputs)
    return {"outputs": [spec_of(t) for t in outputs], "inputs": [spec_of(t) for t in tensors]}


def run_sequence(rank: int, world_size: int, backend: str, steps: list[tuple[str, dict, list[Spec]]]) -> list[Spec]:
    """Runs each (operator, params, inputs) in order on this rank through execute(); returns each first output."""
    use_backend(backend)
    outputs = []
    for op_name, param, inputs in steps:
        op = torch.classes.OperationTorch.OperationTorch(op_name)
        op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend, **param}))
        outputs.append(spec_of(op.execute([tensor_of(s) for s in inputs])[0]))
    return outputs


def run_pairs(rank: int, world_size: int, backend: str, plan: list[tuple[str, int, Spec]]) -> list[Spec]:
    """Send/Recv: plan is this rank's list of ("send", peer, tensor) / ("recv", peer, spec of the expected
    shape), executed in order through SendOperation / RecvOperation. Returns what the receives produced."""
    use_backend(backend)
    got = []
    for kind, peer, spec in plan:
        op = torch.classes.OperationTorch.OperationTorch("SendOperation" if kind == "send" else "RecvOperation")
        key = "destRank" if kind == "send" else "srcRank"
        op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend, key: peer}))
        t = tensor_of(spec)
        out = op.execute([t])
        if kind == "recv":
            got.append(spec_of(out[0]))
        else:
            assert out == []
    return got


def run_pair_mismatch(rank: int, world_size: int, backend: str) -> str:
    """Rank 0 sends 6 float32 to rank 1, which posts a receive of 5: both must raise, naming both sizes."""
    use_backend(backend)
    kind = "SendOperation" if rank == 0 else "RecvOperation"
    op = torch.classes.OperationTorch.OperationTorch(kind)
    key = "destRank" if rank == 0 else "srcRank"
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend, key: 1 - rank}))
    try:
        op.execute([torch.zeros(6 if rank == 0 else 5)])
    except RuntimeError as e:
        return str(e)
    return ""


def run_in_place_allreduce(rank: int, world_size: int, backend: str) -> tuple[list[float], list[float]]:
    """AllReduce through execute_out([x], [x]) over 100 000 elements (beyond the eager path): returns what
    x holds afterwards and the expected sum."""
    use_backend(backend)
    op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend}))
    x = torch.arange(100_000, dtype=torch.float64) * (rank + 1)
    op.execute_out([x], [x])
    want = torch.arange(100_000, dtype=torch.float64) * sum(range(1, world_size + 1))
    return x[::997].tolist(), want[::997].tolist()
