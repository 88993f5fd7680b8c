"""atb_ops.torch_atb: ATB 8.x's Python API for the communication operators, over OperationTorch."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from atb_ops import torch_atb
from atb_ops.torch_atb import operation as operation_module
from tests.support.backends import CPU_BACKENDS, needs_hccl_on_cpu
from tests.support.emulation import output_of, run_emulated
from tests.torch_atb import torch_atb_tasks

COMMON = {
    "rank": 0,
    "rank_size": 0,
    "rank_root": 0,
    "hccl_comm": None,
    "comm_mode": torch_atb.CommMode.COMM_MULTI_PROCESS,
    "rank_table_file": "",
    "comm_domain": "",
}
# ATB torch_atb's defaults (src/torch_atb/bindings.cpp), keyword order included.
DEFAULTS = {
    torch_atb.AllGatherParam: [
        "rank", "rank_size", "rank_root", ("backend", "hccl"), "hccl_comm", "comm_mode", "rank_table_file",
        "comm_domain",
    ],
    torch_atb.AllReduceParam: [
        "rank", "rank_size", "rank_root", ("all_reduce_type", "sum"), ("backend", "hccl"), "hccl_comm", "comm_mode",
        "rank_table_file", "comm_domain", ("quant_type", torch_atb.AllReduceParam.QuantType.QUANT_TYPE_UNQUANT),
        ("out_data_type", torch_atb.AclDataType.ACL_DT_UNDEFINED),
    ],
    torch_atb.BroadcastParam: [
        "rank", "rank_size", "rank_root", "hccl_comm", "comm_mode", ("backend", "hccl"), "rank_table_file",
        "comm_domain",
    ],
    torch_atb.ReduceScatterParam: [
        "rank", "rank_size", "rank_root", ("reduce_type", "sum"), "hccl_comm", "comm_mode", ("backend", "lccl"),
        "rank_table_file", "comm_domain",
    ],
    torch_atb.ReduceScatterVParam: [
        "rank", "rank_size", "rank_root", ("send_counts", []), ("sdispls", []), ("recv_count", 0),
        ("reduce_type", "sum"), "hccl_comm", "comm_mode", ("backend", "hccl"), "rank_table_file", "comm_domain",
    ],
    torch_atb.AllToAllParam: [
        "rank", "rank_size", "rank_root", ("backend", "hccl"), "hccl_comm", "comm_mode", "rank_table_file",
        "comm_domain", ("transpose", False),
    ],
}  # fmt: skip
JSON_KEYS = {
    "rank": "rank", "rank_size": "rankSize", "rank_root": "rankRoot", "backend": "backend", "hccl_comm": "hcclComm",
    "comm_mode": "commMode", "rank_table_file": "rankTableFile", "comm_domain": "commDomain",
    "all_reduce_type": "allReduceType", "quant_type": "quantType", "out_data_type": "outDataType",
    "reduce_type": "reduceType", "send_counts": "sendCounts", "sdispls": "sdispls", "recv_count": "recvCount",
    "transpose": "transpose",
}  # fmt: skip
OP_NAMES = {
    torch_atb.AllGatherParam: "AllGatherOperation",
    torch_atb.AllReduceParam: "AllReduceOperation",
    torch_atb.BroadcastParam: "BroadcastOperation",
    torch_atb.ReduceScatterParam: "ReduceScatterOperation",
    torch_atb.ReduceScatterVParam: "ReduceScatterVOperation",
    torch_atb.AllToAllParam: "AllToAllOperation",
}


def _expected_defaults(cls) -> list[tuple[str, object]]:
    return [item if isinstance(item, tuple) else (item, COMMON[item]) for item in DEFAULTS[cls]]


@pytest.mark.parametrize("cls", list(DEFAULTS), ids=lambda c: c.__name__)
def test_defaults_and_keyword_order(cls):
    expected = _expected_defaults(cls)
    param = cls()
    assert [(name, getattr(param, name)) for name, _ in expected] == expected
    # Positional arguments follow ATB's order: pass every default back positionally.
    assert cls(*[value for _, value in expected]) == param
    assert cls.OP_NAME == OP_NAMES[cls]


@pytest.mark.parametrize("cls", list(DEFAULTS), ids=lambda c: c.__name__)
def test_json_keys_are_atbs(cls):
    param = cls(rank=1, rank_size=4, rank_root=2, comm_domain="dom", hccl_comm=1234)
    as_json = param.to_json()
    assert set(as_json) == {JSON_KEYS[name] for name, _ in _expected_defaults(cls)}
    assert as_json["rank"] == 1 and as_json["rankSize"] == 4 and as_json["rankRoot"] == 2
    assert as_json["hcclComm"] == 1234 and as_json["commMode"] == 0 and as_json["commDomain"] == "dom"
    assert cls().to_json()["hcclComm"] == 0  # None: the operation creates its own communicator
    assert json.loads(json.dumps(as_json)) == as_json
    assert repr(param) == f"{cls.__name__}: " + json.dumps(as_json, sort_keys=True, separators=(",", ":"))


def test_special_fields_in_json():
    per_channel = torch_atb.AllReduceParam.QuantType.QUANT_TYPE_PER_CHANNEL
    quant = torch_atb.AllReduceParam(
        quant_type=per_channel, out_data_type=torch_atb.AclDataType.ACL_FLOAT16, all_reduce_type="max"
    )
    assert (quant.to_json()["quantType"], quant.to_json()["outDataType"]) == (2, 1)
    assert quant.to_json()["allReduceType"] == "max"
    rsv = torch_atb.ReduceScatterVParam(send_counts=(1, 2), sdispls=[0, 1], recv_count=2, reduce_type="prod")
    assert rsv.send_counts == [1, 2]
    assert {k: rsv.to_json()[k] for k in ("sendCounts", "sdispls", "recvCount", "reduceType")} == {
        "sendCounts": [1, 2], "sdispls": [0, 1], "recvCount": 2, "reduceType": "prod",
    }  # fmt: skip
    assert torch_atb.AllToAllParam(transpose=True).to_json()["transpose"] is True
    assert torch_atb.AllGatherParam(comm_mode=1).comm_mode is torch_atb.CommMode.COMM_MULTI_THREAD


def test_enums():
    assert [(m.name, int(m)) for m in torch_atb.CommMode] == [
        ("COMM_UNDEFINED", -1), ("COMM_MULTI_PROCESS", 0), ("COMM_MULTI_THREAD", 1),
    ]  # fmt: skip
    quant = torch_atb.AllReduceParam.QuantType
    assert quant.QUANT_TYPE_UNDEFINED is quant.QUANT_TYPE_UNQUANT and int(quant.QUANT_TYPE_PER_TENSOR) == 1
    assert int(torch_atb.AclDataType.ACL_BF16) == 27 and int(torch_atb.AclFormat.ACL_FORMAT_FRACTAL_NZ) == 29
    assert torch_atb.COMM_MULTI_THREAD is torch_atb.CommMode.COMM_MULTI_THREAD  # exported, as pybind does
    assert torch_atb.ACL_FLOAT16 == 1 and torch_atb.ACL_FORMAT_ND == 2
    assert str(torch_atb.CommMode.COMM_MULTI_PROCESS) == "CommMode.COMM_MULTI_PROCESS"
    assert str(quant.QUANT_TYPE_PER_CHANNEL) == "QuantType.QUANT_TYPE_PER_CHANNEL"


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: torch_atb.AllGatherParam(rank="0"), TypeError, "AllGatherParam.rank: expected int, got str"),
        (lambda: torch_atb.AllGatherParam(rank=True), TypeError, "expected int, got bool"),
        (lambda: torch_atb.AllGatherParam(rank=2**31), ValueError, "does not fit in int32"),
        (lambda: torch_atb.AllGatherParam(backend=1), TypeError, "AllGatherParam.backend: expected str"),
        (lambda: torch_atb.AllGatherParam(comm_mode=5), ValueError, "5 is not a CommMode"),
        (lambda: torch_atb.AllGatherParam(comm_mode="x"), TypeError, "expected CommMode"),
        (lambda: torch_atb.AllGatherParam(hccl_comm=-1), TypeError, "communicator handle"),
        (lambda: torch_atb.AllGatherParam(rankSize=2), TypeError, "rankSize"),
        (lambda: torch_atb.AllToAllParam(transpose=1), TypeError, "AllToAllParam.transpose: expected bool"),
        (lambda: torch_atb.ReduceScatterVParam(send_counts=[1, "2"]), TypeError, r"send_counts\[1\]"),
        (lambda: torch_atb.AllReduceParam(quant_type=7), ValueError, "not a AllReduceQuantType"),
    ],
)
def test_bad_arguments(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_attributes_check_assignments():
    param = torch_atb.AllGatherParam()
    param.rank, param.comm_domain = 3, "x"
    assert (param.rank, param.comm_domain) == (3, "x")
    with pytest.raises(TypeError, match="AllGatherParam.rank_size"):
        param.rank_size = 2.0
    with pytest.raises(AttributeError):
        param.rank_sizes = 2  # a typo is an error, not a new attribute


@pytest.mark.parametrize(
    "param, io",
    [
        (torch_atb.AllGatherParam(), (1, 1)),
        (torch_atb.AllReduceParam(), (1, 1)),
        (torch_atb.AllReduceParam(quant_type=1), (3, 1)),
        (torch_atb.AllReduceParam(quant_type=2), (3, 1)),
        (torch_atb.BroadcastParam(), (1, 0)),
        (torch_atb.ReduceScatterParam(), (1, 1)),
        (torch_atb.ReduceScatterVParam(), (5, 1)),
        (torch_atb.AllToAllParam(), (1, 1)),
    ],
)
def test_input_and_output_numbers_are_atbs(param, io):
    assert param.io_numbers() == io


def test_operation_properties_and_single_rank_forward():
    op = torch_atb.Operation(torch_atb.AllGatherParam(rank=0, rank_size=1, backend="shm"))
    assert (op.name, op.input_num, op.output_num) == ("AllGatherOperation", 1, 1)
    assert repr(op) == "op name: AllGatherOperation, input_num: 1, output_num: 1"
    x = torch.arange(6, dtype=torch.int16).reshape(2, 3)
    (out,) = op.forward([x])
    assert torch.equal(out, x.unsqueeze(0))
    assert op.forward((x,))[0].shape == (1, 2, 3)
    with pytest.raises(AttributeError):
        op.name = "other"


def test_operation_errors():
    with pytest.raises(TypeError, match="expected one of AllGatherParam, AllReduceParam"):
        torch_atb.Operation({"rank": 0})
    with pytest.raises(RuntimeError, match="^ERROR_INVALID_PARAM.*rankSize"):
        torch_atb.Operation(torch_atb.AllGatherParam(rank=0, rank_size=0))
    op = torch_atb.Operation(torch_atb.AllGatherParam(rank=0, rank_size=1, backend="shm"))
    with pytest.raises(TypeError, match="expected a list of Tensors"):
        op.forward(torch.ones(2))
    with pytest.raises(TypeError, match="expected a list of Tensors"):
        op.forward([torch.ones(2), 3])
    with pytest.raises(RuntimeError, match="^ERROR_INVALID_IN_TENSOR_NUM"):
        op.forward([])


@pytest.mark.parametrize("cls", [torch_atb.AllReduceParam, torch_atb.BroadcastParam, torch_atb.ReduceScatterParam,
                                 torch_atb.ReduceScatterVParam], ids=lambda c: c.__name__)  # fmt: skip
def test_every_collective_param_makes_its_operator(cls):
    op = torch_atb.Operation(cls(rank=0, rank_size=1, backend="shm"))
    assert op.name == cls.OP_NAME


@pytest.mark.parametrize("cls", [torch_atb.AllReduceParam, torch_atb.BroadcastParam, torch_atb.ReduceScatterParam],
                         ids=lambda c: c.__name__)  # fmt: skip
def test_one_rank_collectives_return_their_input(cls):
    x = torch.arange(6, dtype=torch.float32).reshape(3, 2) - 2.5
    op = torch_atb.Operation(cls(rank=0, rank_size=1, backend="shm"))
    outs = op.forward([x.clone()])
    got = outs[0] if outs else None
    if cls is torch_atb.BroadcastParam:  # in place: the input is the result
        assert outs == [] or torch.equal(outs[0], x)
    else:
        assert got is not None and torch.equal(got, x), got


def test_prof_keeps_forward_times_per_thread(monkeypatch):
    monkeypatch.setattr(operation_module, "MAX_RUN_TIMES", 3)
    op = torch_atb.Operation(torch_atb.AllGatherParam(rank=0, rank_size=1, backend="shm"))
    stats = torch_atb.Prof.get_prof_stats()
    assert stats is torch_atb.Prof.get_prof_stats()
    before = stats.get_run_time_stats(op.name)
    for _ in range(4):
        op.forward([torch.ones(2)])
    times = stats.get_run_time_stats(op.name)
    assert len(times) == 3 and all(isinstance(t, int) and t >= 0 for t in times) and before != times
    assert stats.get_run_time_stats("NoSuchOperation") == []
    import threading

    other: list = []
    thread = threading.Thread(target=lambda: other.append(torch_atb.Prof.get_prof_stats().get_run_time_stats(op.name)))
    thread.start()
    thread.join()
    assert other == [[]]


def test_module_helpers(monkeypatch):
    torch_atb.set_buffer_size(1 << 20)
    with pytest.raises(ValueError, match="set_buffer_size"):
        torch_atb.set_buffer_size(-1)
    monkeypatch.setenv("ATB_HOME_PATH", "/some/where")
    assert torch_atb.get_atb_home_path() == "/some/where"
    with pytest.raises(AttributeError, match="ElewiseParam is not provided by atb_ops"):
        torch_atb.ElewiseParam  # noqa: B018


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16", "int8", "int64"])
def test_all_gather_forward_on_two_ranks(rank_pools, backend, dtype_name):
    results = rank_pools(2).run(torch_atb_tasks.all_gather, backend, dtype_name, 7)
    for rank, (got, golden) in enumerate(results):
        assert got == golden, f"rank {rank}: {np.frombuffer(got, np.uint8)} != {np.frombuffer(golden, np.uint8)}"


@needs_hccl_on_cpu
@pytest.mark.parametrize("transpose", [False, True])
def test_all_to_all_on_atb_backends_matches_plain_torch(rank_pools, transpose):
    results = rank_pools(2).run(torch_atb_tasks.all_to_all, transpose)
    for rank, result in enumerate(results):
        assert result["out"] == result["golden"], f"rank {rank}"


def test_import_torch_atb_under_the_launcher():
    code = (
        "import torch_atb, atb_ops.torch_atb as t, os;"
        "assert torch_atb.Operation is t.Operation and torch_atb.AllGatherParam is t.AllGatherParam;"
        "assert torch_atb.CommMode is t.CommMode and torch_atb.COMM_MULTI_PROCESS == 0;"
        "import torch; assert hasattr(torch, 'npu');"  # torch_atb needs torch_npu, as ATB's does
        "assert torch_atb.get_atb_home_path() == os.environ['ATB_HOME_PATH'];"
        "print(sorted(set(t.__all__) - set(dir(torch_atb))))"
    )
    proc = run_emulated(code)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", output_of(proc)
