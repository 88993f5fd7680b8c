"""LinearParallelOperation's bad params and inputs: each raises ATB's error name, naming the field or input and its
value, before any communication.

They run in the test process with rankSize 2 and no peer (as tests/atb/test_bad_inputs.py): a check that let bad
input through would reach the rendezvous and fail with ERROR_COMM_TIMEOUT (ATB_OPS_TIMEOUT is short here)
instead of the expected error.
"""

from __future__ import annotations

import json
import re

import pytest
import torch

import atb_ops  # noqa: F401  (registers torch.classes.OperationTorch)
from atb_ops import torch_atb

GOOD = {"rank": 0, "rankSize": 2, "rankRoot": 0, "backend": "lcoc"}
MOE = {"type": 5, "moeInfo": {"epSize": 2, "tpSize": 1, "localExpertNums": 2}}


@pytest.fixture(autouse=True)
def short_timeout(monkeypatch):
    monkeypatch.setenv("ATB_OPS_TIMEOUT", "3")


def expect(error: str, *fragments: str):
    pattern = "^" + re.escape(error) + ".*" + ".*".join(re.escape(f) for f in fragments)
    return pytest.raises(RuntimeError, match=re.compile(pattern, re.S))


def make(**param) -> torch.ScriptObject:
    op = torch.classes.OperationTorch.OperationTorch("LinearParallelOperation")
    op.set_param(json.dumps({**GOOD, **param}))
    return op


BAD_PARAMS = [
    ("type too big", {"type": 7}, ["'type' is 7"]),
    ("type undefined", {"type": -1}, ["'type' is -1"]),
    ("quantType too big", {"quantType": 4}, ["'quantType' is 4"]),
    ("quantType below", {"quantType": -2}, ["'quantType' is -2"]),
    ("per group without size", {"quantType": 2}, ["'quantGroupSize' > 0, got 0"]),
    ("negative group size", {"quantGroupSize": -1}, ["'quantGroupSize' must be >= 0, got -1"]),
    ("outDataType", {"outDataType": 0}, ["'outDataType' is 0"]),
    ("keepIntermediate with type 0", {"keepIntermediate": True}, ["'keepIntermediate' is true with type 0"]),
    ("per token with type 1", {"type": 1, "quantType": 3}, ["quantType' 3 (per token)", "got type 1"]),
    ("quantised 2-D TP", {"type": 4, "quantType": 1, "twoDimTPInfo": {"agDim": 2, "rsDim": 1}},
     ["'quantType' must be -1, got 1"]),
    ("2-D TP sizes", {"type": 4, "twoDimTPInfo": {"agDim": 2, "rsDim": 2}}, ["agDim * rsDim must equal rankSize"]),
    ("2-D TP rsDim 0", {"type": 4, "twoDimTPInfo": {"agDim": 2, "rsDim": 0}}, ["rsDim > 0", "rsDim 0"]),
    ("ep * tp", {**MOE, "moeInfo": {"epSize": 2, "tpSize": 2}}, ["epSize * tpSize must equal rankSize"]),
    ("no experts", {**MOE, "moeInfo": {"epSize": 2, "localExpertNums": 0}}, ["'moeInfo.localExpertNums'", "got 0"]),
    ("17 experts", {**MOE, "moeInfo": {"epSize": 2, "localExpertNums": 17}}, ["localExpertNums", "got 17"]),
    ("MoE per tensor", {**MOE, "quantType": 0}, ["supports quantType -1", "got 0"]),
    ("epSize beyond int8", {**MOE, "moeInfo": {"epSize": 300}}, ["'epSize' is 300", "-128, 127"]),
    ("moeInfo not an object", {"moeInfo": 3}, ["'moeInfo' must be an object, got 3"]),
    ("lcoc rankSize 3", {"rankSize": 3}, ["'lcoc' needs rankSize a power of 2, got 3"]),
    ("backend", {"backend": "mpi"}, ["'backend' is 'mpi'", "expected hccl, lccl, lcoc, mc2, nccl, shm, gloo or auto"]),
    ("hccl type 1", {"backend": "hccl", "type": 1}, ["'hccl' runs LINEAR_ALL_REDUCE (0) only", "got type 1"]),
    ("lccl quantised", {"backend": "lccl", "quantType": 1}, ["'lccl' does not quantise", "got quantType 1"]),
    ("hccl keepIntermediate", {"backend": "hccl", "keepIntermediate": True}, ["no intermediate output"]),
    ("mc2 residual", {"backend": "mc2", "hasResidual": True, "type": 1, "commMode": 1}, ["'mc2'", "hasResidual"]),
    ("mc2 multi-process", {"backend": "mc2", "type": 1}, ["'mc2' supports commMode 1", "got 0"]),
    ("mc2 type 0", {"backend": "mc2", "commMode": 1}, ["'mc2' supports type LINEAR_REDUCE_SCATTER (1) only"]),
    ("rsv", {"rsv": [0, 1]}, ["'rsv' must be all zeros, got 1"]),
    ("rank", {"rank": 2}, ["'rank' is 2"]),
    ("commDomain", {"commDomain": "d" * 129}, ["'commDomain' is 129 bytes"]),
]


@pytest.mark.parametrize("what,param,fragments", BAD_PARAMS, ids=[b[0] for b in BAD_PARAMS])
def test_bad_param(what, param, fragments):
    op = torch.classes.OperationTorch.OperationTorch("LinearParallelOperation")
    with expect("ERROR_INVALID_PARAM", "LinearParallelOperation", *fragments):
        op.set_param(json.dumps({**GOOD, **param}))


@pytest.mark.parametrize("param,shown", [({"moeInfo": {"epsize": 2}}, "'epsize' (did you mean 'epSize'?)"),
                                         ({"bias": "None"}, "'bias'")])
def test_unknown_keys_warn_or_fail_under_strict_params(monkeypatch, param, shown):
    """ATB's linear_parallel_operation_test.py passes `bias` and `parallelType`, which LinearParallelParam lacks: ATB
    ignores them, and so does atb_ops, with a warning (nested objects too); ATB_OPS_STRICT_PARAMS=1 refuses them."""
    op = torch.classes.OperationTorch.OperationTorch("LinearParallelOperation")
    with pytest.warns(UserWarning, match=re.escape(shown)):
        op.set_param(json.dumps({**GOOD, **param}))
    monkeypatch.setenv("ATB_OPS_STRICT_PARAMS", "1")
    with expect("ERROR_INVALID_PARAM", "LinearParallelOperation", "unknown key(s) " + shown):
        op.set_param(json.dumps({**GOOD, **param}))


def test_good_params_and_defaults():
    op = torch.classes.OperationTorch.OperationTorch("LinearParallelOperation")
    assert json.loads(op.set_param(json.dumps({"rankSize": 1}))) == {"result": 0}  # rank defaults to 0 (ATB's)
    for extra in ({"backend": "mc2", "type": 1, "commMode": 1}, {"type": 4, "twoDimTPInfo": {"agDim": 1, "rsDim": 2}},
                  {**MOE, "quantType": 3, "outDataType": 27}, {"backend": "shm", "rankSize": 3}):
        assert json.loads(op.update_param(json.dumps({**GOOD, **extra}))) == {"result": 0}, extra


def test_execute_before_set_param():
    op = torch.classes.OperationTorch.OperationTorch("LinearParallelOperation")
    with expect("ERROR_INVALID_PARAM", "set_param must be called"):
        op.execute([torch.zeros(2, 2).half(), torch.zeros(2, 2).half()])


def f16(*shape):
    return torch.zeros(*shape, dtype=torch.float16)


def i8(*shape):
    return torch.zeros(*shape, dtype=torch.int8)


W8A8 = {"quantType": 1, "outDataType": 1, "transWeight": False}

BAD_INPUTS = [
    ("count", {}, [f16(4, 8)], "ERROR_INVALID_IN_TENSOR_NUM", ["takes 2 input tensors", "(x, weight)", "got 1"]),
    ("count residual", {"hasResidual": True}, [f16(4, 8), f16(6, 8)], "ERROR_INVALID_IN_TENSOR_NUM",
     ["takes 3", "residual"]),
    ("x 1-D", {}, [f16(8), f16(6, 8)], "ERROR_INVALID_TENSOR_DIM", ["input 0 (x)", "[m, k] or [batch, m, k]"]),
    ("weight 4-D", {}, [f16(4, 8), f16(1, 1, 6, 8)], "ERROR_INVALID_TENSOR_DIM", ["input 1 (weight)"]),
    ("weight batch", {}, [f16(4, 8), f16(2, 6, 8)], "ERROR_INVALID_TENSOR_DIM", ["leading batch of 1"]),
    ("k", {}, [f16(4, 8), f16(6, 7)], "ERROR_INVALID_TENSOR_DIM", ["k=8", "k=7", "transWeight true"]),
    ("mixed floats", {}, [f16(4, 8), f16(6, 8).bfloat16()], "ERROR_INVALID_TENSOR_INI_MATCH",
     ["[float16, bf16 -> float16]", "supported: [float16, float16 -> float16], [bf16, bf16 -> bf16]"]),
    ("float32", {}, [f16(4, 8).float(), f16(6, 8).float()], "ERROR_INVALID_TENSOR_INI_MATCH", ["[float, float"]),
    ("float outDataType", {"outDataType": 27}, [f16(4, 8), f16(6, 8)], "ERROR_INVALID_TENSOR_INI_MATCH",
     ["-> bf16]", "outDataType 27"]),
    ("residual shape", {"hasResidual": True}, [f16(4, 8), f16(6, 8), f16(7)], "ERROR_INVALID_TENSOR_DIM",
     ["input 2 (residual)", "[6] or [1, 6]", "got [7]"]),
    ("residual dtype", {"hasResidual": True}, [f16(4, 8), f16(6, 8), f16(6).bfloat16()],
     "ERROR_INVALID_TENSOR_INI_MATCH", ["residual"]),
    ("w8a8 no outDataType", {"quantType": 1, "transWeight": False},
     [i8(4, 8), i8(8, 6), torch.zeros(6, dtype=torch.int32), torch.zeros(6, dtype=torch.int64)],
     "ERROR_INVALID_TENSOR_INI_MATCH", ["[int8, int8, int32, int64 -> int8]"]),
    ("w8a8 float scale to float16", W8A8,
     [i8(4, 8), i8(8, 6), torch.zeros(6, dtype=torch.int32), torch.zeros(6)], "ERROR_INVALID_TENSOR_INI_MATCH",
     ["[int8, int8, int32, float -> float16]", "[int8, int8, int32, float -> bf16]"]),
    ("w8a8 per group", {**W8A8, "quantType": 2, "quantGroupSize": 4},
     [i8(4, 8), i8(8, 6), torch.zeros(2, 6, dtype=torch.int32), torch.zeros(2, 6, dtype=torch.int64)],
     "ERROR_INVALID_PARAM", ["per group", "W8A8"]),
    ("scale shape", W8A8, [i8(4, 8), i8(8, 6), torch.zeros(6, dtype=torch.int32), torch.zeros(5, dtype=torch.int64)],
     "ERROR_INVALID_TENSOR_DIM", ["input 3 (deqScale)", "[6] or [1, 6]", "got [5]"]),
    ("per tensor scale", {**W8A8, "quantType": 0},
     [i8(4, 8), i8(8, 6), torch.zeros(1, dtype=torch.int32), torch.zeros(6, dtype=torch.int64)],
     "ERROR_INVALID_TENSOR_DIM", ["deqScale", "[1] or [1, 1]"]),
    ("per group 1-D scale", {"quantType": 2, "quantGroupSize": 4, "transWeight": False},
     [f16(4, 8), i8(8, 6), f16(2, 6), f16(6)], "ERROR_INVALID_TENSOR_DIM", ["deqScale", "must have shape [2, 6]"]),
    ("token scale", {**W8A8, "quantType": 3},
     [i8(4, 8), i8(8, 6), torch.zeros(6, dtype=torch.int32), torch.zeros(6, dtype=torch.int64), torch.zeros(3)],
     "ERROR_INVALID_TENSOR_DIM", ["input 4 (perTokenScale)", "[4]"]),
    ("reduce-scatter rows", {"type": 1}, [f16(3, 8), f16(6, 8)], "ERROR_INVALID_TENSOR_DIM",
     ["divisible by rankSize=2", "[3, 8]"]),
    ("2-D TP rows", {"type": 4, "twoDimTPInfo": {"agDim": 1, "rsDim": 2}}, [f16(3, 8), f16(6, 8)],
     "ERROR_INVALID_TENSOR_DIM", ["divisible by rsDim (2)"]),
    ("mc2 k", {"backend": "mc2", "type": 1, "commMode": 1}, [f16(4, 8), f16(6, 8)], "ERROR_INVALID_TENSOR_DIM",
     ["k in [256, 65535)", "got 8"]),
]


def moe_inputs(x_rows=3, k=8, weight=None, matrix=None, max_out=6):
    matrix = torch.tensor([[1, 0, 1, 1], [0, 2, 0, 1]], dtype=torch.int32) if matrix is None else matrix
    return [f16(x_rows, k), f16(2, 6, k) if weight is None else weight, matrix,
            torch.zeros(max_out, dtype=torch.int32)]


BAD_MOE = [
    ("x 3-D", [f16(1, 3, 8), *moe_inputs()[1:]], "ERROR_INVALID_TENSOR_DIM", ["2-D [tokens, k]"]),
    ("weight experts", moe_inputs(weight=f16(3, 6, 8)), "ERROR_INVALID_TENSOR_DIM",
     ["[localExpertNums=2, n, k]", "[3, 6, 8]"]),
    ("matrix shape", moe_inputs(matrix=torch.zeros(2, 3, dtype=torch.int32)), "ERROR_INVALID_TENSOR_DIM",
     ["input 2 (globalTokensPerExpertMatrix)", "[epSize=2, epSize * localExpertNums=4]"]),
    ("matrix int64", moe_inputs(matrix=torch.zeros(2, 4, dtype=torch.int64)), "ERROR_INVALID_TENSOR_INI_MATCH",
     ["int64"]),
    ("negative count", moe_inputs(matrix=torch.tensor([[1, 0, -1, 1], [0, 2, 0, 1]], dtype=torch.int32)),
     "ERROR_INVALID_PARAM", ["globalTokensPerExpertMatrix)[0][2] is -1"]),
    ("too few tokens", moe_inputs(x_rows=2), "ERROR_INVALID_TENSOR_DIM", ["has 2 rows", "sends 3 tokens"]),
    ("maxOutputSize", moe_inputs(max_out=204801), "ERROR_INVALID_TENSOR_SIZE", ["204801 output rows; at most 204800"]),
    ("k", moe_inputs(k=24001), "ERROR_INVALID_TENSOR_SIZE", ["k up to 24000, got k=24001"]),
]


@pytest.mark.parametrize("what,param,inputs,error,fragments", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input(what, param, inputs, error, fragments):
    op = make(**param)
    with expect(error, "LinearParallelOperation", *fragments):
        op.infer_shape(inputs)
    with expect(error, *fragments):
        op.execute(inputs)


@pytest.mark.parametrize("what,inputs,error,fragments", BAD_MOE, ids=[b[0] for b in BAD_MOE])
def test_bad_moe_input(what, inputs, error, fragments):
    op = make(**MOE)
    with expect(error, *fragments):
        op.execute(inputs)


def test_combine_output_rows():
    """GMM_REDUCE_SCATTER_ALLTOALLVC returns this rank's tokens into maxOutputSize's rows: too few is an error."""
    op = make(**{**MOE, "type": 6})
    with expect("ERROR_INVALID_TENSOR_DIM", "gives 2 output rows", "returns 3 tokens"):
        op.execute(moe_inputs(x_rows=4, max_out=2))


def test_execute_out_wrong_output():
    """ATB's codes: an output of another shape ERROR_INVALID_TENSOR_DIM, another count ERROR_INVALID_IN_TENSOR_NUM."""
    op = make()
    with expect("ERROR_INVALID_TENSOR_DIM", "output has shape [4, 7]"):
        op.execute_out([f16(4, 8), f16(6, 8)], [f16(4, 7)])
    with expect("ERROR_INVALID_IN_TENSOR_NUM", "takes 1 output"):
        op.execute_out([f16(4, 8), f16(6, 8)], [f16(4, 6), f16(4, 6)])


def test_infer_shape_per_type():
    """ATB's output shapes (and the intermediate's), from infer_shape alone: no communication."""
    cases = [
        ({}, [f16(2, 5, 8), f16(6, 8)], [[2, 5, 6]]),
        ({"type": 1}, [f16(4, 8), f16(6, 8)], [[2, 6]]),
        ({"type": 1}, [f16(1, 4, 8), f16(6, 8)], [[1, 2, 6]]),
        ({"type": 1}, [f16(2, 3, 8), f16(6, 8)], [[1, 3, 6]]),
        ({"type": 2, "keepIntermediate": True}, [f16(3, 8), f16(6, 8)], [[6, 6], [6, 8]]),
        ({"type": 3, "transWeight": False}, [f16(3, 8), f16(1, 8, 6)], [[3, 6]]),
        ({"type": 4, "twoDimTPInfo": {"agDim": 2, "rsDim": 1}}, [f16(3, 8), f16(6, 8)], [[6, 6]]),
        ({"type": 4, "twoDimTPInfo": {"agDim": 1, "rsDim": 2}}, [f16(4, 8), f16(6, 8)], [[2, 6]]),
        (MOE, moe_inputs(max_out=9), [[9, 6]]),
        ({**MOE, "type": 6}, moe_inputs(max_out=9), [[9, 6]]),
    ]
    for param, inputs, shapes in cases:
        got = json.loads(make(**param).infer_shape(inputs))
        assert got["num"] == len(shapes) and got["shape"] == shapes, (param, got)
        assert got["dtype"][0] == 1, got  # ACL_FLOAT16


def test_torch_atb_param():
    """torch_atb.LinearParallelParam: ATB's keywords, defaults, nested structs, enums, JSON and input counts."""
    p = torch_atb.LinearParallelParam()
    assert (p.trans_weight, p.rank, p.rank_size, p.backend, p.hccl_comm, p.type, p.quant_type, p.out_data_type) == (
        True, 0, 0, "hccl", None, torch_atb.LinearParallelParam.ParallelType.LINEAR_ALL_REDUCE,
        torch_atb.LinearParallelParam.QuantType.QUANT_TYPE_UNQUANT, torch_atb.AclDataType.ACL_DT_UNDEFINED)
    assert (p.moe_info.localExpertNums, p.moe_info.epSize, p.moe_info.tpSize) == (1, 1, 1)  # the C++ struct's
    info = torch_atb.LinearParallelParam.MoeInfo()
    assert (info.localExpertNums, info.epSize, info.tpSize) == (0, 0, 0)  # the pybind constructor's
    two = torch_atb.LinearParallelParam.TwoDimTPInfo(ag_dim=2, rs_dim=1)
    assert two.to_json() == {"agDim": 2, "rsDim": 1, "innerDimIsAg": 1}
    q = torch_atb.LinearParallelParam(rank=1, rank_size=2, backend="lcoc", type=5, quant_type=3,
                                      moe_info=torch_atb.LinearParallelParam.MoeInfo(2, 2, 1), out_data_type=27)
    j = q.to_json()
    assert j["moeInfo"] == {"localExpertNums": 2, "epSize": 2, "tpSize": 1} and j["type"] == 5 and j["quantType"] == 3
    assert q.io_numbers() == (6, 1)  # x, weight, deqScale, perTokenScale, matrix, maxOutputSize
    assert torch_atb.LinearParallelParam(backend="lcoc", quant_type=1, has_residual=True).io_numbers() == (5, 1)
    assert torch_atb.LinearParallelParam(backend="hccl", has_residual=True).io_numbers() == (3, 1)
    assert torch_atb.LinearParallelParam(type=2, keep_intermediate=True).io_numbers() == (2, 2)
    with pytest.raises(ValueError, match="epSize: 200 does not fit in int8"):
        torch_atb.LinearParallelParam.MoeInfo(epSize=200)
    with pytest.raises(TypeError, match="moe_info: expected MoeInfo"):
        torch_atb.LinearParallelParam(moe_info={"epSize": 2})
    with pytest.raises(ValueError, match="ParallelType"):
        torch_atb.LinearParallelParam(type=9)
    with expect("ERROR_INVALID_PARAM", "'type' is 7"):
        torch_atb.Operation(torch_atb.LinearParallelParam(rank_size=1, backend="lcoc", type=7))


def test_threads_share_one_operation():
    """The operation holds only its param: threads calling one PURE_LINEAR operation (no communicator) with
    different shapes each get their own result."""
    import threading

    op = make(type=3, transWeight=False)
    failures = []

    def worker(seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        for i in range(30):
            x = torch.randn(1 + (seed + i) % 7, 16, generator=gen).half()
            w = torch.randn(16, 4 + seed, generator=gen).half()
            got = op.execute([x, w])[0]
            want = (x.double() @ w.double()).half()
            if got.shape != want.shape or not torch.allclose(got.double(), want.double(), rtol=2e-3, atol=2e-3):
                failures.append((seed, i))

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
