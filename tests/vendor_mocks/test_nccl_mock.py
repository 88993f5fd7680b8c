"""The NCCL backend's logic on CPU, over a recording mock of its NcclApi (atb_ops._testing._NcclMock).

Nothing here touches a GPU or libnccl: the mock logs every NCCL call the backend makes, and scripts
results, asynchronous errors, InProgress phases and stream states. Expected call sequences are built
here from the contract (docs/contract.md: grouped ncclSend/ncclRecv at byte offsets of the displacements, zero
counts skipped, on the current stream), not read back from the C++. What the HCCL backend promises too (the
caller's communicator, creation and its failures, refusals before any NCCL call, asynchronous errors) is checked
for both in tests/vendor_mocks/test_communicator_contract.py.
"""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest
import torch

import atb_ops
from atb_ops import _C, _hooks
from tests.support.launch import finish, start
from tests.support.rank_threads import run_threads
from tests.support.rendezvous import record_path
from tests.vendor_mocks.nccl_mock_helpers import (
    NCCL_INVALID_USAGE,
    NCCL_REMOTE_ERROR,
    NCCL_SYSTEM_ERROR,
    adopted,
    created,
    mock_lib,
    ops,
    unique_job,
)

SEND_BASE = 0x10000000  # where the mock entry pretends the send and receive buffers live
RECV_BASE = 0x20000000
STREAM = 0x5EED

# NCCL's name for each dtype and how many wire items one element is. NCCL has no bool and no int16:
# those travel as ncclUint8 bytes.
WIRE = {
    torch.bool: ("ncclUint8", 1),
    torch.uint8: ("ncclUint8", 1),
    torch.int8: ("ncclInt8", 1),
    torch.int16: ("ncclUint8", 2),
    torch.int32: ("ncclInt32", 1),
    torch.int64: ("ncclInt64", 1),
    torch.float16: ("ncclFloat16", 1),
    torch.bfloat16: ("ncclBfloat16", 1),
    torch.float32: ("ncclFloat32", 1),
    torch.float64: ("ncclFloat64", 1),
}

DATA_OPS = ("send", "recv")


def element_size(dtype: torch.dtype) -> int:
    """Bytes per element, from torch itself."""
    return torch.empty((), dtype=dtype).element_size()


def expected_alltoallv(
    size: int,
    send_counts: list[int],
    sdispls: list[int],
    recv_counts: list[int],
    rdispls: list[int],
    dtype: torch.dtype,
    stream: int = STREAM,
    as_bytes: bool = False,
) -> list[tuple]:
    """The contract's call sequence: one group; per peer in rank order a send then a recv, zero counts skipped."""
    es = element_size(dtype)
    name, items = ("ncclUint8", es) if as_bytes else WIRE[dtype]
    moves = []
    for peer in range(size):
        if send_counts[peer]:
            moves.append(("send", SEND_BASE + sdispls[peer] * es, send_counts[peer] * items, name, peer, stream))
        if recv_counts[peer]:
            moves.append(("recv", RECV_BASE + rdispls[peer] * es, recv_counts[peer] * items, name, peer, stream))
    return [("groupStart",), *moves, ("groupEnd",)] if moves else []


def project(calls: list[dict]) -> list[tuple]:
    """The fields the contract pins, per recorded call."""
    out = []
    for c in calls:
        if c["op"] in DATA_OPS:
            out.append((c["op"], c["buf"], c["count"], c["dtype"], c["peer"], c["stream"]))
        else:
            out.append((c["op"],))
    return out


# --- the call sequence of an alltoallv ---------------------------------------------------------------


def test_byte_offsets_counts_and_order_follow_the_displacements() -> None:
    # Rank 1 of 4; displacements out of rank order, with gaps, and an overlapping send region.
    sc, sd = [3, 2, 4, 1], [10, 0, 2, 4]
    rc, rd = [5, 2, 1, 6], [14, 0, 2, 5]
    calls = mock_lib._nccl_mock_alltoallv(1, 4, sc, sd, rc, rd, torch.float32)
    assert project(calls) == expected_alltoallv(4, sc, sd, rc, rd, torch.float32)
    # Spot-check one value by hand: the recv from rank 0 lands at byte 14 * 4 = 56 of the output.
    assert next(c for c in calls if c["op"] == "recv" and c["peer"] == 0)["buf"] == RECV_BASE + 56


def test_zero_counts_are_skipped() -> None:
    sc, sd = [0, 4, 0], [0, 0, 4]
    rc, rd = [2, 4, 0], [0, 2, 6]
    calls = mock_lib._nccl_mock_alltoallv(1, 3, sc, sd, rc, rd, torch.int64)
    assert project(calls) == expected_alltoallv(3, sc, sd, rc, rd, torch.int64)
    data = [c for c in calls if c["op"] in DATA_OPS]
    assert all(c["count"] > 0 for c in data)
    assert ("send", 0) not in {(c["op"], c["peer"]) for c in data}
    assert ("send", 2) not in {(c["op"], c["peer"]) for c in data}
    assert ("recv", 2) not in {(c["op"], c["peer"]) for c in data}


def test_nothing_to_move_makes_no_nccl_group() -> None:
    calls = mock_lib._nccl_mock_alltoallv(0, 2, [0, 0], [0, 0], [0, 0], [0, 0], torch.float16)
    assert calls == []


def test_self_pair_is_a_send_and_recv_to_own_rank_inside_the_group() -> None:
    calls = mock_lib._nccl_mock_alltoallv(2, 3, [1, 1, 5], [0, 1, 2], [1, 1, 5], [0, 1, 2], torch.int32)
    seq = project(calls)
    assert seq[0] == ("groupStart",) and seq[-1] == ("groupEnd",)
    self_moves = [s for s in seq[1:-1] if s[4] == 2]
    assert self_moves == [
        ("send", SEND_BASE + 2 * 4, 5, "ncclInt32", 2, STREAM),
        ("recv", RECV_BASE + 2 * 4, 5, "ncclInt32", 2, STREAM),
    ]


def test_invalid_layout_is_rejected_by_core_validation_before_any_nccl_call() -> None:
    mock = adopted(0, 2)
    with pytest.raises(RuntimeError, match=r"^ERROR_INVALID_PARAM"):
        mock.alltoallv([1, -1], [0, 1], [1, 1], [0, 1], torch.float32)
    assert ops(mock) == []


def test_stream_and_comm_are_passed_through_to_every_call() -> None:
    mock = adopted(0, 3, handle=0xC0DE)
    mock.alltoallv([1, 2, 3], [0, 1, 3], [1, 2, 3], [0, 1, 3], torch.float32, stream=0xABCDEF)
    data = [c for c in mock.calls() if c["op"] in DATA_OPS]
    assert len(data) == 6
    assert {c["stream"] for c in data} == {0xABCDEF}
    assert {c["comm"] for c in data} == {0xC0DE}


@pytest.mark.parametrize("dtype", list(WIRE), ids=lambda d: str(d).removeprefix("torch."))
def test_dtype_travels_as_its_nccl_type(dtype: torch.dtype) -> None:
    sc, sd, rc, rd = [2, 3], [3, 0], [1, 3], [3, 0]
    calls = mock_lib._nccl_mock_alltoallv(1, 2, sc, sd, rc, rd, dtype)
    assert project(calls) == expected_alltoallv(2, sc, sd, rc, rd, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool], ids=str)
def test_any_dtype_can_travel_as_bytes(dtype: torch.dtype) -> None:
    sc, sd, rc, rd = [2, 3], [0, 2], [2, 2], [0, 2]
    calls = mock_lib._nccl_mock_alltoallv(0, 2, sc, sd, rc, rd, dtype, as_bytes=True)
    assert project(calls) == expected_alltoallv(2, sc, sd, rc, rd, dtype, as_bytes=True)
    assert {c["dtype"] for c in calls if c["op"] in DATA_OPS} == {"ncclUint8"}


# --- groups stay paired, errors carry NCCL's words ---------------------------------------------------


def assert_groups_paired(seq: list[str]) -> None:
    depth = 0
    for op in seq:
        if op == "groupStart":
            depth += 1
        elif op == "groupEnd":
            depth -= 1
            assert depth >= 0, seq
        elif op in DATA_OPS:
            assert depth == 1, f"{op} outside a group: {seq}"
    assert depth == 0, seq


def test_groups_are_paired_over_many_calls() -> None:
    mock = adopted(1, 3)
    for k in range(5):
        mock.alltoallv([k, 1, 2], [0, k, k + 1], [1, 1, 0], [0, 1, 2], torch.float16)
    seq = ops(mock)
    assert seq.count("groupStart") == seq.count("groupEnd") == 5
    assert_groups_paired(seq)


def test_a_failing_send_still_ends_the_group_and_reports_nccl_error_text() -> None:
    mock = adopted(0, 3)
    mock.fail_on("send", 1, NCCL_SYSTEM_ERROR)  # the second send of the group
    with pytest.raises(RuntimeError) as info:
        mock.alltoallv([1, 2, 3], [0, 1, 3], [1, 1, 1], [0, 1, 2], torch.float32)
    message = str(info.value)
    assert message.startswith("ERROR_NCCL_FAIL: ")
    assert "sending 2 elements from sdispls[1]=1 to rank 1" in message
    assert "ncclSend failed with ncclResult 2 (mock: scripted failure)" in message
    assert "NCCL last error: 'mock last error'" in message
    assert re.search(r"\[csrc/comm/nccl/nccl_comm\.cpp:\d+\]$", message)  # file and line of the failing call
    seq = ops(mock)
    assert seq[-1] == "groupEnd"
    assert_groups_paired(seq)
    assert "commAbort" not in seq  # a synchronous argument error leaves the communicator usable


def test_a_failing_group_end_is_reported() -> None:
    mock = adopted(0, 2)
    mock.fail_on("groupEnd", 0, NCCL_INVALID_USAGE)
    with pytest.raises(RuntimeError, match=r"^ERROR_NCCL_FAIL: .*ncclGroupEnd.*ncclResult 5"):
        mock.alltoallv([1, 1], [0, 1], [1, 1], [0, 1], torch.float32)
    assert_groups_paired(ops(mock))


# --- all-gather ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(WIRE), ids=lambda d: str(d).removeprefix("torch."))
def test_allgather_is_one_ncclallgather(dtype: torch.dtype) -> None:
    mock = adopted(1, 4)
    mock.allgather(6, dtype, stream=0x77)
    name, items = WIRE[dtype]
    (call,) = mock.calls()
    assert (call["op"], call["send"], call["recv"], call["count"], call["dtype"], call["stream"], call["comm"]) == (
        "allGather", SEND_BASE, RECV_BASE, 6 * items, name, 0x77, 0xADD0)


# --- ownership: adopted handles are the caller's, created ones are ours ------------------------------


def test_created_comm_is_initialised_non_blocking_and_destroyed_by_its_handle() -> None:
    """How NCCL's init is asked and which handle is destroyed (the contract's part, the root's id and one
    destruction, is test_communicator_contract.py's)."""
    mock = created(rank=0, size=1)
    (init,) = [c for c in mock.calls() if c["op"] == "commInitRank"]
    assert (init["nranks"], init["rank"], init["blocking"]) == (1, 0, 0)  # non-blocking: init can time out
    handle = mock.handle
    assert handle == init["comm"]
    mock.release()
    destroys = [c for c in mock.calls() if c["op"] == "commDestroy"]
    assert [c["comm"] for c in destroys] == [handle]


# --- timeouts and asynchronous faults ----------------------------------------------------------------


def test_nonblocking_init_is_polled_until_ready() -> None:
    mock = mock_lib._NcclMock()
    mock.set_in_progress(5)
    mock.create(0, 1, job_key=unique_job())
    assert mock.counts()["commGetAsyncError"] >= 6
    assert "commAbort" not in ops(mock)


def test_init_that_never_completes_times_out_and_aborts() -> None:
    mock = mock_lib._NcclMock()
    mock.set_in_progress(-1)
    with pytest.raises(RuntimeError, match=r"^ERROR_COMM_TIMEOUT: .*communicator creation.*ATB_OPS_TIMEOUT=0.2 s"):
        mock.create(0, 1, job_key=unique_job(), timeout_s=0.2)
    seq = ops(mock)
    assert seq.count("commAbort") == 1 and "commDestroy" not in seq


def test_async_fault_aborts_an_owned_comm_once() -> None:
    """An owned communicator that met an asynchronous fault is aborted, not destroyed (the contract's part, the
    communicator unusable afterwards, is test_communicator_contract.py's)."""
    mock = created()
    mock.set_async_error(NCCL_REMOTE_ERROR)
    with pytest.raises(RuntimeError, match=r"^ERROR_NCCL_FAIL: .*ncclResult 6.*was aborted"):
        mock.alltoallv([4], [0], [4], [0], torch.float32)
    assert ops(mock).count("commAbort") == 1
    assert "ncclResult 6" in mock.broken_by
    mock.release()
    assert "commDestroy" not in ops(mock)  # aborted already frees it


def test_async_fault_on_an_adopted_comm_is_reported_but_never_aborted() -> None:
    mock = adopted(0, 2)
    mock.set_async_error(NCCL_REMOTE_ERROR)
    with pytest.raises(RuntimeError, match=r"^ERROR_NCCL_FAIL: .*belongs to the caller"):
        mock.alltoallv([1, 1], [0, 1], [1, 1], [0, 1], torch.float32)
    mock.release()
    seq = ops(mock)
    assert "commAbort" not in seq and "commDestroy" not in seq


def test_in_progress_group_end_is_waited_for() -> None:
    mock = created()
    mock.set_in_progress(3)
    polls = mock.counts().get("commGetAsyncError", 0)
    mock.alltoallv([2], [0], [2], [0], torch.float32)
    assert mock.counts()["commGetAsyncError"] - polls >= 4
    assert "commAbort" not in ops(mock)


def test_wait_stream_polls_the_given_stream_until_done() -> None:
    mock = created()
    mock.set_stream_pending(4)
    mock.wait_stream(0x1234)
    queries = [c for c in mock.calls() if c["op"] == "streamQuery"]
    assert len(queries) == 5 and {c["stream"] for c in queries} == {0x1234}


def test_wait_stream_timeout_aborts() -> None:
    mock = created(timeout_s=0.2)
    mock.set_stream_pending(-1)
    with pytest.raises(RuntimeError, match=r"^ERROR_COMM_TIMEOUT: .*barrier did not finish on the stream"):
        mock.wait_stream()
    assert ops(mock).count("commAbort") == 1


def test_wait_stream_sees_an_async_nccl_error_while_the_stream_hangs() -> None:
    mock = created(timeout_s=30)
    mock.set_stream_pending(-1)
    mock.set_async_error(NCCL_REMOTE_ERROR)
    with pytest.raises(RuntimeError, match=r"^ERROR_NCCL_FAIL: .*barrier failed asynchronously with ncclResult 6"):
        mock.wait_stream()
    assert ops(mock).count("commAbort") == 1


def test_wait_stream_reports_a_cuda_error() -> None:
    mock = created()
    mock.set_stream_pending(0, "cudaErrorIllegalAddress: an illegal memory access was encountered")
    with pytest.raises(RuntimeError, match=r"^ERROR_NCCL_FAIL: .*cudaErrorIllegalAddress"):
        mock.wait_stream()
    assert ops(mock).count("commAbort") == 1


# --- bootstrap: rankRoot's id reaches every rank -----------------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys
    from atb_ops import _testing
    rank, size, root, job, join = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    m = _testing._NcclMock()
    m.set_join_dir(join)  # init completes once all ranks joined, so the root withdraws its file only then
    m.create(rank, size, root=root, comm_domain="moe", job_key=job, timeout_s=120)
    ids = {c["op"]: c["id"] for c in m.calls() if c["op"] in ("getUniqueId", "commInitRank")}
    print(ids.get("getUniqueId", "-"), ids["commInitRank"])
    """
)


def rendezvous_path(job: str, domain: str) -> Path:
    """Where the node-local bootstrap keeps rankRoot's id (README: rendezvous), scoped by job and domain
    (rankSize and rankRoot travel in the record, so ranks that disagree on them meet and are told): a record
    file in the user's private folder."""
    return record_path(f"nccl|{job}|{domain}")


def test_node_local_rendezvous_gives_every_process_the_roots_id(tmp_path: Path) -> None:
    job = unique_job()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(atb_ops.__file__).parent.parent), env.get("PYTHONPATH", "")])
    order = (2, 0, 1)  # the root is not the first to start
    exits = finish([start(CHILD, [str(r), "3", "1", job, str(tmp_path)], env) for r in order], timeout_s=240)
    for e in exits:
        assert e.returncode == 0, e.stderr
    lines = {r: e.stdout.split() for r, e in zip(order, exits, strict=True)}
    drawn = lines[1][0]
    assert len(drawn) == 256
    assert [lines[r][0] for r in (0, 2)] == ["-", "-"]  # only the root draws an id
    assert {lines[r][1] for r in (0, 1, 2)} == {drawn}
    assert not rendezvous_path(job, "moe").exists()  # the root removed it once everyone had joined


def test_repeated_creation_in_one_process_draws_fresh_ids() -> None:
    job = unique_job()
    ids = []
    for _ in range(2):
        mock = mock_lib._NcclMock()
        mock.create(0, 1, comm_domain="again", job_key=job)
        ids.append(next(c["id"] for c in mock.calls() if c["op"] == "commInitRank"))
    assert ids[0] != ids[1]


def test_store_bootstrap_shares_the_id_between_thread_ranks() -> None:
    import torch.distributed as dist

    store = dist.HashStore()
    mocks = [mock_lib._NcclMock() for _ in range(2)]
    job = unique_job()

    _C.set_store_provider(lambda required, rank, size, timeout_s: store)
    try:
        # A rank's failure is re-raised here.
        run_threads(2, lambda r: mocks[r].create(r, 2, root=1, comm_domain="store", job_key=job, timeout_s=20))
    finally:
        _hooks.install(_C)  # back to the package's own hooks
    inits = [next(c for c in m.calls() if c["op"] == "commInitRank") for m in mocks]
    drawn = [c["id"] for c in mocks[1].calls() if c["op"] == "getUniqueId"]
    assert inits[0]["id"] == inits[1]["id"] == drawn[0]
    assert [c["op"] for c in mocks[0].calls()].count("getUniqueId") == 0
    assert store.num_keys() == 0  # the root removed its keys once every rank had read them


def test_store_bootstrap_timeout_names_the_root_and_key() -> None:
    import torch.distributed as dist

    store = dist.HashStore()
    _C.set_store_provider(lambda required, rank, size, timeout_s: store)
    try:
        mock = mock_lib._NcclMock()
        with pytest.raises(RuntimeError, match=r"^ERROR_COMM_TIMEOUT: torch.distributed store key 'atb_ops/nccl/x'"
                           r".*root rank 0"):
            mock.create(1, 2, root=0, comm_domain="x", job_key=unique_job(), timeout_s=0.5)
    finally:
        _hooks.install(_C)  # back to the package's own hooks


def test_package_hooks_use_the_default_process_groups_store() -> None:
    import torch.distributed as dist

    assert not dist.is_initialized()
    assert _hooks.job_store() is None
    store = dist.HashStore()
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        assert _hooks.job_store() is not None
        # Two ranks as threads, each with a job key of its own: the non-root one can only learn the id through the
        # process group's store.
        mocks = [mock_lib._NcclMock() for _ in range(2)]
        run_threads(2, lambda r: mocks[r].create(r, 2, comm_domain="pg", job_key=unique_job()))
        ids = [next(c["id"] for c in m.calls() if c["op"] == "commInitRank") for m in mocks]
        (drawn,) = [c["id"] for c in mocks[0].calls() if c["op"] == "getUniqueId"]
        assert ids == [drawn, drawn]
    finally:
        dist.destroy_process_group()
