"""Property-based tests (hypothesis): params, variant packs and layouts.

Every example either matches an independent model (golden result, or "this input is invalid") or raises
a clear ATB-style RuntimeError; none crashes or hangs. Derandomized so CI is repeatable; 900 examples.
"""

from __future__ import annotations

import json

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import atb_ops  # noqa: F401
from tests.atb import rank_tasks
from tests.support.golden import DTYPES, bits_view, golden_alltoallv, random_payload, rank_layouts

KNOWN_KEYS = ["rank", "rankSize", "rankRoot", "backend", "hcclComm", "commMode", "rankTableFile", "commDomain"]
FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.one_of(
    st.integers(-5, 5),
    st.integers(-(2**40), 2**40),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, width=32),
    st.sampled_from(["hccl", "shm", "gloo", "auto", "nccl", "lccl", "", "x" * 130, "/nonexistent/rt.json"]),
    st.lists(st.integers(0, 3), max_size=2),
)


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def param_is_valid(p: dict, name: str = "AllToAllVV2Operation") -> bool:
    """The contract (docs/contract.md, section 2), written independently of the C++. ATB's params default
    `rank` to -1 in AllToAllVV2Param and to 0 in the other communication params."""
    if set(p) - set(KNOWN_KEYS):
        return False
    q = {
        "rank": -1 if name == "AllToAllVV2Operation" else 0,
        "rankSize": 0,
        "rankRoot": 0,
        "backend": "hccl",
        "hcclComm": 0,
        "commMode": 0,
        "rankTableFile": "",
        "commDomain": "",
    } | p
    for key in ("rank", "rankSize", "rankRoot", "commMode"):
        if not is_int(q[key]) or not -(2**31) <= q[key] < 2**31:
            return False
    if not is_int(q["hcclComm"]) or q["hcclComm"] < 0:
        return False
    if not all(isinstance(q[k], str) for k in ("backend", "rankTableFile", "commDomain")):
        return False
    if q["rankSize"] <= 0 or (q["rank"] == -1 and q["rankSize"] > 1):
        return False
    if q["backend"] not in ("hccl", "nccl", "shm", "gloo", "auto") or q["commMode"] not in (0, 1):
        return False
    if len(q["commDomain"]) > 128 or q["rankTableFile"]:  # no test file exists
        return False
    if q["hcclComm"] == 0 and not (0 <= q["rank"] < q["rankSize"] and 0 <= q["rankRoot"] < q["rankSize"]):
        return False
    return True


@FUZZ
@given(
    st.dictionaries(st.sampled_from(KNOWN_KEYS + ["rsv", "Rank"]), json_values, max_size=6),
    st.sampled_from(["AllToAllVV2Operation", "AllGatherOperation", "AllToAllOperation"]),
)
def test_fuzz_params(param, name):
    op = torch.classes.OperationTorch.OperationTorch(name)
    text = json.dumps(param)
    try:
        result = op.set_param(text)
    except RuntimeError as e:
        assert str(e).startswith("ERROR_INVALID_PARAM: "), str(e)
        assert not param_is_valid(param, name), (param, str(e))
    else:
        assert json.loads(result) == {"result": 0}
        assert param_is_valid(param, name), param


def layout_is_valid(sc, sd, rc, rd, n, numel) -> bool:
    if any(len(v) != n for v in (sc, sd, rc, rd)) or any(x < 0 for v in (sc, sd, rc, rd) for x in v):
        return False
    total = sum(rc)
    if any(sd[i] + sc[i] > numel or rd[i] + rc[i] > total for i in range(n)):
        return False
    covered = np.zeros(total, dtype=int)
    for i in range(n):
        covered[rd[i] : rd[i] + rc[i]] += 1
    return bool((covered <= 1).all())


counts = st.lists(st.integers(-2, 12), min_size=1, max_size=3)


@FUZZ
@given(counts, counts, counts, counts, st.integers(0, 30), st.integers(-1, 2), st.sampled_from(list(DTYPES)))
def test_fuzz_variant_packs(sc, sd, rc, rd, numel, infer_delta, dtype_name):
    """infer_shape validates the whole variant pack without communicating."""
    op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
    op.set_param(json.dumps({"rank": 0, "rankSize": 2, "backend": "shm"}))
    x = torch.zeros(numel, dtype=DTYPES[dtype_name])
    tensors = [torch.tensor(v, dtype=torch.int64) for v in (sc, sd, rc, rd)]
    infer = torch.zeros(max(sum(rc) + infer_delta, 0), dtype=torch.int8)
    valid = layout_is_valid(sc, sd, rc, rd, 2, numel) and infer.numel() == sum(rc)
    try:
        shapes = op.infer_shape([x, *tensors, infer])
    except RuntimeError as e:
        assert str(e).startswith(("ERROR_INVALID_PARAM: ", "ERROR_INVALID_TENSOR_DIM: ")), str(e)
        assert not valid, (sc, sd, rc, rd, numel, str(e))
    else:
        assert valid, (sc, sd, rc, rd, numel)
        assert shapes == [[1, sum(rc)]]


@FUZZ
@given(
    st.lists(st.integers(0, 40), min_size=4, max_size=4),
    st.sampled_from(list(DTYPES)),
    st.sampled_from(["shm", "gloo"]),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**31),
    st.sampled_from(["execute", "pack", "out"]),
)
def test_fuzz_layouts_on_two_ranks(rank_pools, flat_counts, dtype_name, backend, gaps, overlap, seed, mode):
    rng = np.random.default_rng(seed)
    matrix = np.array(flat_counts, dtype=np.int64).reshape(2, 2)
    layouts = rank_layouts(rng, matrix, gaps=gaps, overlap=overlap)
    payloads = [random_payload(rng, lay.send_numel, dtype_name) for lay in layouts]
    per_rank = [
        (p, (lay.send_numel,), lay.send_counts, lay.sdispls, lay.recv_counts, lay.rdispls)
        for lay, p in zip(layouts, payloads, strict=True)
    ]
    outs = rank_pools(2).run(rank_tasks.run_alltoallvv2, backend, dtype_name, mode, "fuzz", per_rank=per_rank)
    for got, want in zip(outs, golden_alltoallv(payloads, layouts, dtype_name), strict=True):
        np.testing.assert_array_equal(bits_view(got, dtype_name), want)
