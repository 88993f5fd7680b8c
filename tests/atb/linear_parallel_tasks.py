"""Rank-side code of tests/atb/test_linear_parallel.py: one LinearParallelOperation call on this rank's inputs.

Inputs and outputs travel as raw bytes (tests.collective_tasks' Spec), so the test process computes its goldens
from exactly the values the ranks used.
"""

from __future__ import annotations

import json

import torch

from tests.atb.collective_tasks import Spec, sentinel_like, spec_of, tensor_of
from tests.support.backends import use_backend


def run_linear_parallel(
    rank: int,
    world_size: int,
    backend: str,
    param: dict,
    inputs: list[Spec],
    out_specs: list[tuple[str, tuple[int, ...]]] | None,
) -> dict:
    """Runs LinearParallelOperation once: execute() when out_specs is None, else execute_out() into
    sentinel-filled buffers. Returns {"outputs": [Spec], "infer": infer_shape's JSON}."""
    use_backend(backend)
    op = torch.classes.OperationTorch.OperationTorch("LinearParallelOperation")
    full = {"rank": rank, "rankSize": world_size, "backend": backend, **param}
    assert json.loads(op.set_param(json.dumps(full))) == {"result": 0}
    tensors = [tensor_of(s) for s in inputs]
    infer = json.loads(op.infer_shape(tensors))
    if out_specs is None:
        outputs = op.execute(tensors)
    else:
        outputs = [sentinel_like(name, shape) for name, shape in out_specs]
        op.execute_out(tensors, outputs)
    return {"outputs": [spec_of(t) for t in outputs], "infer": infer}


def run_expect_error(rank: int, world_size: int, backend: str, param: dict, inputs: list[Spec]) -> str:
    """Runs the operation and returns the RuntimeError's message ('' if it succeeded)."""
    use_backend(backend)
    op = torch.classes.OperationTorch.OperationTorch("LinearParallelOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": backend, **param}))
    try:
        op.execute([tensor_of(s) for s in inputs])
    except RuntimeError as e:
        return str(e)
    return ""


def run_torch_atb(rank: int, world_size: int, kwargs: dict, inputs: list[Spec]) -> list[Spec]:
    """The same operation through atb_ops.torch_atb: Operation(LinearParallelParam(**kwargs)).forward."""
    from atb_ops import torch_atb

    kwargs = dict(kwargs)
    if "moe_info" in kwargs:
        kwargs["moe_info"] = torch_atb.LinearParallelParam.MoeInfo(**kwargs["moe_info"])
    if "two_dim_TP_info" in kwargs:
        kwargs["two_dim_TP_info"] = torch_atb.LinearParallelParam.TwoDimTPInfo(**kwargs["two_dim_TP_info"])
    param = torch_atb.LinearParallelParam(rank=rank, rank_size=world_size, **kwargs)
    op = torch_atb.Operation(param)
    assert op.input_num == len(inputs), (op.input_num, len(inputs))
    return [spec_of(t) for t in op.forward([tensor_of(s) for s in inputs])]
