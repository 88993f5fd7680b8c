"""The communicator contract both vendor backends keep, hccl (over HcclApi) and nccl (over NcclApi), checked once
over each one's recording mock through a small adapter (hccl_adapter.py, nccl_adapter.py; mock_adapter.py says
what an adapter gives). What only one vendor does stays in test_hccl_mock.py and test_nccl_mock.py.

The contract (docs/contract.md: hcclComm; README "Backends and communicators"):
- a caller's handle (hcclComm) is used as given, once its size and rank were read back, and never freed; one of
  another rank or size is refused, naming both, and left alone;
- a communicator made here starts from the root's id, drawn once, and is freed exactly once however often it is
  released; a creation that fails after the vendor handed one back frees it;
- a root that never publishes is a timeout naming the root and the record waited for, before any vendor init;
- a rank's counts to itself that disagree, and a dtype the vendor cannot move, are refused before any vendor call;
- nothing to gather calls nothing;
- an asynchronous vendor error fails the call, and the communicator is unusable from then on: later calls fail at
  once without reaching the vendor.

Expected values (ids, counts, names, messages) come from the vendors' headers and the contract, never from the code
under test.
"""

from __future__ import annotations

import re

import pytest
import torch

from tests.support.rendezvous import record_path
from tests.vendor_mocks.hccl_adapter import HcclAdapter
from tests.vendor_mocks.mock_adapter import MockedVendor
from tests.vendor_mocks.nccl_adapter import NcclAdapter
from tests.vendor_mocks.nccl_mock_helpers import unique_job


@pytest.fixture(params=["hccl", "nccl"])
def vendor(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> MockedVendor:
    """Each vendor's mock behind its adapter; HCCL's process-wide mock emptied first."""
    if request.param == "hccl":
        request.getfixturevalue("fresh_hccl_mock")
        return HcclAdapter(monkeypatch)
    return NcclAdapter()


def _fails(vendor: MockedVendor) -> str:
    """The start of a vendor failure's message: ATB's error name with the backend's."""
    return f"^ERROR_{vendor.name.upper()}_FAIL: "


# ---------------------------------------------------------------- the caller's communicator


def test_callers_handle_is_used_as_given_and_never_freed(vendor: MockedVendor) -> None:
    handles = vendor.caller_handles(2)
    ranks = vendor.adopt(handles)
    try:
        for rank, handle in zip(ranks, handles, strict=True):
            assert rank.native.handle == handle and not vendor.owns(rank)
            # Its size and rank are read back first (checked against the param), before it is used.
            assert tuple(vendor.call_names(rank)[:2]) == vendor.shape_queries, vendor.call_names(rank)
        vendor.alltoallv_equal_splits(ranks)
        for rank in ranks:
            assert len(vendor.call_names(rank)) > 2, "the collective never reached the caller's communicator"
    finally:
        vendor.release(ranks)
    assert [vendor.frees(rank) for rank in ranks] == [0, 0]
    for kind in ("draw_id", "init", "destroy", "abort"):  # nothing made, nothing freed
        assert vendor.calls(kind) == [], kind


@pytest.mark.parametrize(("handle_rank", "handle_size", "rank", "size"), [(1, 2, 0, 2), (1, 8, 1, 4)],
                         ids=["another-rank", "another-size"])
def test_callers_handle_of_another_rank_or_size_is_refused_and_left_alone(
    vendor: MockedVendor, handle_rank: int, handle_size: int, rank: int, size: int
) -> None:
    with pytest.raises(RuntimeError) as refused:
        vendor.adopt_mismatched(handle_rank, handle_size, rank, size)
    message = str(refused.value)
    assert message.startswith("ERROR_INVALID_PARAM: ") and "hcclComm " in message, message
    assert re.search(rf"param says \(?rank {rank} of rankSize {size}\b", message), message
    assert re.search(rf"is rank {handle_rank} of (size )?{handle_size}\b", message), message
    assert vendor.calls("destroy") == [] and vendor.calls("abort") == []


# ---------------------------------------------------------------- communicators made here


def test_created_communicator_starts_from_the_roots_id_and_is_freed_exactly_once(vendor: MockedVendor) -> None:
    ranks = vendor.create(2)
    (drawn,) = vendor.calls("draw_id")  # by the root alone
    assert len(vendor.id_of(drawn)) == vendor.id_length
    assert [vendor.id_of(c) for c in vendor.calls("init")] == [vendor.id_of(drawn)] * 2
    assert all(vendor.owns(rank) for rank in ranks)
    assert [vendor.frees(rank) for rank in ranks] == [0, 0]
    vendor.release(ranks)
    vendor.release(ranks)  # releasing twice must not free twice
    assert [vendor.frees(rank) for rank in ranks] == [1, 1]
    assert vendor.calls("abort") == []


def test_failed_creation_frees_what_the_vendor_handed_back(vendor: MockedVendor) -> None:
    with pytest.raises(RuntimeError, match=_fails(vendor) + vendor.failed_creation_says):
        vendor.create_failing()
    (handed,) = vendor.handles_named()
    other = {"destroy": "abort", "abort": "destroy"}[vendor.frees_failed_creation_with]
    assert [c["comm"] for c in vendor.calls(vendor.frees_failed_creation_with)] == [handed]
    assert vendor.calls(other) == []


def test_root_that_never_publishes_is_a_timeout_naming_it(vendor: MockedVendor) -> None:
    job, domain = unique_job(), "nobody-home"
    with pytest.raises(RuntimeError) as info:
        vendor.create_rank(1, 2, job, domain, timeout_s=0.3)
    message = str(info.value)
    assert re.match(r"ERROR_COMM_TIMEOUT: node-local rendezvous .*rank 1 waited 0.3 s .*for root rank 0 to publish",
                    message), message
    assert str(record_path(f"{vendor.name}|{job}|{domain}")) in message  # the record it waited for
    assert vendor.calls("init") == []


# ---------------------------------------------------------------- refused before the vendor is called


@pytest.mark.parametrize(
    ("size", "layout"),
    [(1, ([2], [0], [3], [0])), (2, ([3, 1], [0, 3], [2, 1], [0, 2]))],
    ids=["alone", "of-two"],
)
def test_counts_to_itself_that_disagree_are_refused_before_any_vendor_call(
    vendor: MockedVendor, size: int, layout: tuple[list[int], ...]
) -> None:
    send_counts, sdispls, recv_counts, rdispls = layout
    ranks = vendor.adopt_laying_out_every_transfer(vendor.caller_handles(size))
    try:
        before = vendor.call_names(ranks[0])
        names = rf"sendCounts\[0\]={send_counts[0]} \(to itself\).*recvCounts\[0\]={recv_counts[0]}"
        with pytest.raises(RuntimeError, match=r"^ERROR_INVALID_PARAM: .*" + names):
            vendor.alltoallv(ranks[0], send_counts, sdispls, recv_counts, rdispls)
        assert vendor.call_names(ranks[0]) == before
    finally:
        vendor.release(ranks)


@pytest.mark.parametrize(
    ("dtype", "torch_name"),
    [(torch.complex64, "ComplexFloat"), (torch.uint16, "UInt16"), (torch.float8_e4m3fn, "Float8_e4m3fn")],
    ids=["complex64", "uint16", "float8_e4m3fn"],
)
def test_dtype_the_vendor_cannot_move_is_named_beside_the_supported_ones(
    vendor: MockedVendor, dtype: torch.dtype, torch_name: str
) -> None:
    with pytest.raises(RuntimeError) as info:
        vendor.check_dtype(dtype)
    message = str(info.value)
    assert message.startswith("ERROR_INVALID_TENSOR_DTYPE: "), message
    assert f"backend '{vendor.name}' cannot move" in message and f"dtype {torch_name}" in message, message
    assert "bfloat16" in message.partition("supported: ")[2], message  # the supported list is spelled out


def test_nothing_to_gather_calls_nothing(vendor: MockedVendor) -> None:
    ranks = vendor.adopt(vendor.caller_handles(2))
    try:
        before = [vendor.call_names(rank) for rank in ranks]
        vendor.allgather(ranks, 0)
        assert [vendor.call_names(rank) for rank in ranks] == before
    finally:
        vendor.release(ranks)


# ---------------------------------------------------------------- asynchronous errors


def test_asynchronous_error_fails_the_call_and_leaves_the_communicator_unusable(vendor: MockedVendor) -> None:
    rank = vendor.create_failing_asynchronously()
    try:
        with pytest.raises(RuntimeError, match=_fails(vendor) + vendor.async_error_says):
            vendor.alltoallv(rank, [2], [0], [2], [0])
        before = vendor.call_names(rank)
        with pytest.raises(RuntimeError, match=_fails(vendor) + vendor.unusable_says):
            vendor.allgather([rank], 2)
        assert vendor.call_names(rank) == before  # refused without a vendor call
    finally:
        vendor.release([rank])
    assert vendor.frees(rank) == 1
