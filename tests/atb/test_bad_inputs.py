"""Bad params and variant packs: each raises a clear RuntimeError, starting with ATB's error name and
naming the field and value, before any communication.

These run in the test process itself with rankSize 2 and no peer: a check that let bad input through
would reach the rendezvous and fail with ERROR_COMM_TIMEOUT after ATB_OPS_TIMEOUT (set short here)
instead of the expected error, so a missing check fails the test rather than hanging it.
"""

from __future__ import annotations

import json
import re
import sys

import pytest
import torch

import atb_ops

GOOD = {"rank": 0, "rankSize": 2, "rankRoot": 0, "backend": "shm"}


# Both Python doors to the one operator: every check below must read the same through either.
OP_CLASSES = {
    "torchscript": lambda name: torch.classes.OperationTorch.OperationTorch(name),
    "pybind": atb_ops.Operation,
}
make = OP_CLASSES["torchscript"]


@pytest.fixture(autouse=True)
def short_timeout(monkeypatch):
    monkeypatch.setenv("ATB_OPS_TIMEOUT", "3")


@pytest.fixture(autouse=True, params=list(OP_CLASSES))
def op_class(request, monkeypatch):
    """Runs every test of this file once per class (torch.classes.OperationTorch, atb_ops.Operation)."""
    monkeypatch.setattr(sys.modules[__name__], "make", OP_CLASSES[request.param])
    return request.param


def op(name: str = "AllToAllVV2Operation", **param):
    o = make(name)
    o.set_param(json.dumps({**GOOD, **param}))
    return o


def i64(values):
    return torch.tensor(values, dtype=torch.int64)


def expect(error: str, *fragments: str):
    pattern = "^" + re.escape(error) + ".*" + ".*".join(re.escape(f) for f in fragments)
    return pytest.raises(RuntimeError, match=re.compile(pattern, re.S))


BAD_PARAMS = [
    ("not json", "{rank: 0", ["not valid JSON"]),
    ("not an object", "[1, 2]", ["must be a JSON object"]),
    ("rankSize zero", json.dumps({**GOOD, "rankSize": 0}), ["'rankSize' must be > 0, got 0"]),
    ("rank unset with many ranks", json.dumps({**GOOD, "rank": -1}), ["'rank' is -1", "rankSize is 2"]),
    ("rank too big", json.dumps({**GOOD, "rank": 2}), ["'rank' is 2", "rankSize=2"]),
    ("rankRoot out of range", json.dumps({**GOOD, "rankRoot": 5}), ["'rankRoot' is 5"]),
    ("commMode", json.dumps({**GOOD, "commMode": 2}), ["'commMode'", "got 2"]),
    ("commMode undefined", json.dumps({**GOOD, "commMode": -1}), ["'commMode'", "got -1"]),
    ("commDomain too long", json.dumps({**GOOD, "commDomain": "d" * 129}),
     ["'commDomain' is 129 bytes long in UTF-8; at most 128 bytes"]),
    ("commDomain of 40 emoji", json.dumps({**GOOD, "commDomain": "\U0001F600" * 40}),
     ["'commDomain' is 160 bytes long in UTF-8; at most 128 bytes"]),
    (
        "rankTableFile missing",
        json.dumps({**GOOD, "rankTableFile": "/nonexistent/rt.json"}),
        ["'rankTableFile' '/nonexistent/rt.json' does not exist"],
    ),
    ("backend unknown", json.dumps({**GOOD, "backend": "mpi"}),
     ["'backend' is 'mpi'", "accepts hccl, ", "nccl, shm, gloo or auto"]),
    ("rank as string", json.dumps({**GOOD, "rank": "0"}), ["'rank' must be an integer, got \"0\""]),
    ("hcclComm negative", json.dumps({**GOOD, "hcclComm": -4}), ["'hcclComm'", "-4"]),
]


@pytest.mark.parametrize("what,param,fragments", BAD_PARAMS, ids=[b[0] for b in BAD_PARAMS])
@pytest.mark.parametrize("name", ["AllToAllVV2Operation", "AllGatherOperation", "AllToAllOperation"])
def test_bad_param(name, what, param, fragments):
    o = make(name)
    with expect("ERROR_INVALID_PARAM", *fragments):
        o.set_param(param)


def test_unknown_keys_warn_naming_the_nearest_known_key(monkeypatch):
    """ATB's JSON readers ignore keys its params do not have (its own test files pass some): so does atb_ops, with
    one Python warning naming each unknown key and the known key it is likely a typo of; ATB_OPS_STRICT_PARAMS=1
    refuses them, before anything else happens."""
    o = make("AllToAllVV2Operation")
    with pytest.warns(UserWarning, match=r"unknown key\(s\) 'parallelType', 'rnak' \(did you mean 'rank'\?\)"):
        assert json.loads(o.set_param(json.dumps({**GOOD, "rnak": 1, "parallelType": "x"}))) == {"result": 0}
    monkeypatch.setenv("ATB_OPS_STRICT_PARAMS", "1")
    with expect("ERROR_INVALID_PARAM", "unknown key(s) 'rankz' (did you mean 'rank'?)", "known keys: backend"):
        make("AllToAllVV2Operation").set_param(json.dumps({**GOOD, "rankz": 1}))


@pytest.mark.parametrize("name", ["AllToAllVV2Operation", "AllGatherOperation", "AllReduceOperation"])
def test_error_from_a_missing_field_names_the_typo_that_hid_it(name):
    """{"rnakSize": 2}: rankSize keeps its default and rank 1 is refused for it; the error names the unknown key
    too, since it is the cause (the unknown-key warning alone would come only once every field passed)."""
    with expect("ERROR_INVALID_PARAM", "unknown key(s) 'rnakSize' (did you mean 'rankSize'?)"):
        make(name).set_param(json.dumps({"rank": 1, "rnakSize": 2}))


def test_good_param_returns_atb_status():
    o = make("AllToAllVV2Operation")
    assert json.loads(o.set_param(json.dumps(GOOD))) == {"result": 0}
    assert json.loads(o.update_param(json.dumps({**GOOD, "commDomain": "x"}))) == {"result": 0}


def test_unknown_operation():
    with expect("ERROR_INVALID_PARAM", "unknown operation 'AllToAllVV3Operation'", "AllToAllVV2Operation"):
        make("AllToAllVV3Operation")


def test_execute_before_set_param():
    o = make("AllToAllVV2Operation")
    with expect("ERROR_INVALID_PARAM", "set_param must be called before execute"):
        o.execute([torch.zeros(4), i64([2, 2]), i64([0, 2]), i64([2, 2]), i64([0, 2]), torch.zeros(4)])


X = torch.arange(8, dtype=torch.float32)
OK_COUNTS = [i64([4, 4]), i64([0, 4]), i64([4, 4]), i64([0, 4])]


BAD_EXECUTES = [
    ("three inputs", [X, i64([4, 4]), i64([0, 4])], "ERROR_INVALID_IN_TENSOR_NUM", ["takes 6 inputs", "got 3"]),
    (
        "counts int32",
        [X, torch.tensor([4, 4], dtype=torch.int32), *OK_COUNTS[1:], torch.zeros(8)],
        "ERROR_INVALID_TENSOR_DTYPE",
        ["'sendCounts' must be int64", "Int"],
    ),
    (
        "counts wrong length",
        [X, i64([4, 4, 0]), *OK_COUNTS[1:], torch.zeros(8)],
        "ERROR_INVALID_TENSOR_DIM",
        ["'sendCounts' must have shape [rankSize=2]", "[3]"],
    ),
    (
        "negative count",
        [X, i64([-1, 4]), *OK_COUNTS[1:], torch.zeros(8)],
        "ERROR_INVALID_PARAM",
        ["sendCounts[0] is -1"],
    ),
    (
        "negative displacement",
        [X, OK_COUNTS[0], i64([0, -2]), *OK_COUNTS[2:], torch.zeros(8)],
        "ERROR_INVALID_PARAM",
        ["sdispls[1] is -2"],
    ),
    (
        "send region past x",
        [X, OK_COUNTS[0], i64([0, 5]), *OK_COUNTS[2:], torch.zeros(8)],
        "ERROR_INVALID_PARAM",
        ["send region for rank 1", "sdispls[1]=5", "sendCounts[1]=4", "input's 8 elements"],
    ),
    (
        "receive regions overlap",
        [X, *OK_COUNTS[:3], i64([0, 2]), torch.zeros(8)],
        "ERROR_INVALID_PARAM",
        ["receive regions overlap", "rank 0 [0, 4)", "rank 1 [2, 6)"],
    ),
    (
        "receive region past output",
        [X, *OK_COUNTS[:3], i64([0, 5]), torch.zeros(8)],
        "ERROR_INVALID_PARAM",
        ["receive region for rank 1", "rdispls[1]=5", "output's 8 elements"],
    ),
    (
        "tensorForInferShape length",
        [X, *OK_COUNTS, torch.zeros(7)],
        "ERROR_INVALID_TENSOR_DIM",
        ["tensorForInferShape must have shape [sum(recvCounts)=8]", "[7]"],
    ),
    (
        "complex x",
        [X.to(torch.complex64), *OK_COUNTS, torch.zeros(8)],
        "ERROR_INVALID_TENSOR_DTYPE",
        ["input x has dtype ComplexFloat"],
    ),
]


@pytest.mark.parametrize("what,inputs,error,fragments", BAD_EXECUTES, ids=[b[0] for b in BAD_EXECUTES])
def test_bad_execute(what, inputs, error, fragments):
    with expect(error, *fragments):
        op().execute(inputs)


def test_broadcast_into_an_expanded_view_is_refused_before_any_communication():
    """Broadcast writes its result into x, which an expanded view (stride 0) cannot hold: refused before any data
    moves (a non-root rank used to raise torch's own error after the broadcast, its peers already done)."""
    with expect("ERROR_INVALID_PARAM", "BroadcastOperation input x of shape [4]", "expanded view"):
        op("BroadcastOperation").execute([torch.ones(1).expand(4)])


def test_variant_pack_disagrees_with_tensors():
    o = op()
    o.set_varaintpack_param(
        json.dumps({"sendCounts": [4, 4], "sdispls": [0, 4], "recvCounts": [4, 4], "rdispls": [4, 0]})
    )
    with expect("ERROR_INVALID_PARAM", "'rdispls' [0, 4] disagrees with set_varaintpack_param's [4, 0]"):
        o.execute([X, *OK_COUNTS, torch.zeros(8)])


@pytest.mark.parametrize(
    "pack,fragments",
    [
        ({"sendCounts": [4, 4], "sdispls": [0, 4], "recvCounts": [4, 4]}, ["missing 'rdispls'"]),
        (
            {"sendCounts": [4, 4.5], "sdispls": [0, 4], "recvCounts": [4, 4], "rdispls": [0, 4]},
            ["'sendCounts' must hold integers only"],
        ),
    ],
)
def test_bad_variant_pack(pack, fragments):
    with expect("ERROR_INVALID_PARAM", *fragments):
        op().set_variantpack_param(json.dumps(pack))


def test_variant_pack_unknown_key_warns(monkeypatch):
    pack = {"sendCounts": [4, 4], "sdispls": [0, 4], "recvCounts": [4, 4], "rdispls": [0, 4], "sendCount": 1}
    with pytest.warns(UserWarning, match=re.escape("'sendCount' (did you mean 'sendCounts'?)")):
        op().set_variantpack_param(json.dumps(pack))
    monkeypatch.setenv("ATB_OPS_STRICT_PARAMS", "1")
    with expect("ERROR_INVALID_PARAM", "unknown key(s) 'sendCount'"):
        op().set_variantpack_param(json.dumps(pack))


def test_two_inputs_without_pack():
    with expect("ERROR_INVALID_IN_TENSOR_NUM", "got 2", "no variant pack was set"):
        op().execute([X, torch.zeros(8)])


def test_variant_pack_wrong_length_caught_at_execute():
    o = op()
    o.set_varaintpack_param(json.dumps({"sendCounts": [8], "sdispls": [0], "recvCounts": [8], "rdispls": [0]}))
    with expect("ERROR_INVALID_PARAM", "sendCounts has 1 entries but rankSize is 2"):
        o.execute([X, torch.zeros(8)])


@pytest.mark.parametrize(
    "out,error,fragments",
    [
        (torch.empty(1, 7), "ERROR_INVALID_TENSOR_DIM", ["output has shape [1, 7]", "expected [1, 8]"]),
        (
            torch.empty(1, 8, dtype=torch.float16),
            "ERROR_INVALID_TENSOR_INI_MATCH",
            ["output has dtype Half", "expected Float"],
        ),
        (torch.empty(1, 16)[:, ::2], "ERROR_INVALID_PARAM", ["output must be contiguous"]),
    ],
)
def test_bad_execute_out(out, error, fragments):
    with expect(error, *fragments):
        op().execute_out([X, *OK_COUNTS, torch.zeros(8)], [out])


def test_setup_checks_the_outputs_it_is_given():
    """ATB's Setup checks the variant pack's outputs: another shape is ERROR_INVALID_TENSOR_DIM (the operators'
    SetupCheckImpl), another dtype ERROR_INVALID_TENSOR_INI_MATCH (CheckIniMatch), another count
    ERROR_INVALID_IN_TENSOR_NUM (ATB's code for both lists); no output list at all is let through."""
    o = op()
    inputs = [X, *OK_COUNTS, torch.zeros(8)]
    assert json.loads(o.setup(inputs, [torch.empty(1, 8)]))["result"] == 0
    assert json.loads(o.setup(inputs, []))["result"] == 0
    with expect("ERROR_INVALID_TENSOR_DIM", "output has shape [1, 7]", "expected [1, 8]"):
        o.setup(inputs, [torch.empty(1, 7)])
    with expect("ERROR_INVALID_TENSOR_INI_MATCH", "output has dtype Half"):
        o.setup(inputs, [torch.empty(1, 8, dtype=torch.float16)])
    with expect("ERROR_INVALID_IN_TENSOR_NUM", "takes 1 output tensor(s), got 2"):
        o.setup(inputs, [torch.empty(1, 8), torch.empty(1, 8)])


def test_alltoall_indivisible_numel():
    # ATB's AllToAll cuts x by its flattened elements, so 3 x 1 elements do not split over 2 ranks.
    with expect("ERROR_INVALID_TENSOR_DIM", "3 elements, which do not split into rankSize=2", "[3, 1]"):
        op("AllToAllOperation").execute([torch.zeros(3, 1)])


def test_allgather_input_count():
    with expect("ERROR_INVALID_IN_TENSOR_NUM", "takes 1 input tensors, got 2"):
        op("AllGatherOperation").execute([torch.zeros(3), torch.zeros(3)])


@pytest.mark.parametrize(("backend", "fragments"), [
    ("shm", ["param 'hcclComm' is 1234: backend 'shm' takes no handle"]),
    # 'hccl' runs on shm without an HCCL backend in the process: the error names what was asked for and why.
    ("hccl", ["param 'hcclComm' is 1234 with backend 'hccl' on cpu tensors, which run on 'shm' here",
              "python -m atb_ops run"]),
])
@pytest.mark.filterwarnings("ignore:atb_ops. backend 'hccl' on cpu tensors runs on the 'shm' backend")
def test_a_handle_no_backend_here_takes_is_named(backend, fragments):
    with expect("ERROR_INVALID_PARAM", *fragments):
        op(hcclComm=1234, backend=backend).execute([X, *OK_COUNTS, torch.zeros(8)])


@pytest.mark.parametrize("method", ["set_param", "update_param"])
def test_a_refused_param_keeps_the_operation_as_it_was(method):
    """ATB's set_param keeps its operation when a new param fails. Here too, even where the refused param's own
    fields were read before the failing check: transpose false (read first) is refused for lccl on an Atlas A2,
    and the operation still splits by columns; a refused rankSize leaves rankSize 2."""
    o = op("AllToAllOperation", backend="lccl", transpose=True)
    x = torch.zeros(4, 6)
    column_blocks = json.loads(o.infer_shape([x]))["shape"]
    assert column_blocks == [[8, 3]]
    with expect("ERROR_INVALID_PARAM", "'lccl' without transpose runs only on an Atlas A3"):
        getattr(o, method)(json.dumps({**GOOD, "backend": "lccl", "transpose": False}))
    with expect("ERROR_INVALID_PARAM", "'rank' is 5"):
        getattr(o, method)(json.dumps({**GOOD, "backend": "lccl", "transpose": True, "rank": 5, "rankSize": 4}))
    assert json.loads(o.infer_shape([x]))["shape"] == column_blocks


@pytest.mark.parametrize("npu_name", [None, "Ascend910B3", "Ascend910_9391"])
def test_lccl_alltoall_without_transpose_needs_an_atlas_a3(monkeypatch, npu_name):
    """ATB refuses AllToAll on 'lccl' without transpose unless the SoC is an A3 ('Ascend910_93...'); the emulated
    NPU is an Atlas A2 unless ATB_OPS_NPU_NAME says otherwise."""
    if npu_name is not None:
        monkeypatch.setenv("ATB_OPS_NPU_NAME", npu_name)
    o = make("AllToAllOperation")
    param = json.dumps({**GOOD, "backend": "lccl"})
    if npu_name == "Ascend910_9391":
        assert json.loads(o.set_param(param)) == {"result": 0}
    else:
        with expect("ERROR_INVALID_PARAM", "'lccl' without transpose runs only on an Atlas A3",
                    f"'{npu_name}'" if npu_name else "an Atlas A2"):
            o.set_param(param)


def _one_server_table(tmp_path, ranks: int) -> str:
    table = tmp_path / "rank_table.json"
    table.write_text(json.dumps({
        "version": "1.0", "server_count": "1", "status": "completed",
        "server_list": [{"server_id": "127.0.0.1", "device": [
            {"device_id": str(r), "device_ip": f"192.0.2.{r + 1}", "rank_id": str(r)} for r in range(ranks)]}],
    }))
    return str(table)


@pytest.mark.parametrize("given", ["hcclComm", "rankTableFile"])
@pytest.mark.parametrize("name,inputs", [
    ("AllGatherVOperation", lambda: [torch.ones(4), i64([2]), i64([2, 2]), i64([0, 2]), torch.empty(4)]),
    ("ReduceScatterVOperation", lambda: [torch.ones(4, 1), i64([2, 2]), i64([0, 2]), i64([2]), torch.empty(2)]),
])
def test_v_operators_refuse_a_rank_outside_rank_size(tmp_path, given, name, inputs):
    """With an hcclComm or a rankTableFile, set_param lets any rank through (as ATB does: the communicator says
    which it is), but the V operators index their counts by it: a rank outside [0, rankSize) is named before any
    communication (it read past the counts' end: garbage in the message, or a crash)."""
    where = {"hcclComm": 12345, "rankTableFile": _one_server_table(tmp_path, 2)}[given]
    o = op(name, rank=100_000_000, **{given: where})
    with expect("ERROR_INVALID_PARAM", "param 'rank' is 100000000", "[0, rankSize=2)"):
        o.execute(inputs())


def test_rank_outside_the_rank_table_is_named(tmp_path):
    """A rank the table does not list fails at creation, at once, naming the table and the rank (before, it met the
    table's ranks and timed out, or wrote past the end of the segment's rank slots)."""
    table = _one_server_table(tmp_path, 2)
    with expect("ERROR_INVALID_PARAM", "lists 2 ranks", "rank 7 is not one of them"):
        op("AllGatherOperation", rank=7, rankTableFile=table).execute([torch.zeros(3)])


def test_strict_backend_refuses_hccl_fallback(monkeypatch):
    monkeypatch.setenv("ATB_OPS_STRICT_BACKEND", "1")
    o = make("AllToAllVV2Operation")
    with expect("ERROR_INVALID_PARAM", "'backend' is 'hccl'", "ATB_OPS_STRICT_BACKEND=1"):
        o.set_param(json.dumps({**GOOD, "backend": "hccl"}))


def test_missing_peer_times_out_naming_it(monkeypatch):
    """A good op whose peer never comes: an error naming rank 1 after ATB_OPS_TIMEOUT, not a hang."""
    monkeypatch.setenv("ATB_OPS_TIMEOUT", "1")
    monkeypatch.setenv("ATB_OPS_JOB_ID", "lonely-rank-test")
    with expect("ERROR_COMM_TIMEOUT", "rank(s) 1", "did not join within ATB_OPS_TIMEOUT=1"):
        op(commDomain="lonely").execute([X, *OK_COUNTS, torch.zeros(8)])
