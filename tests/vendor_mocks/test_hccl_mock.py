"""The HCCL backend's logic on CPU, through the recording mock of HcclApi (tests/native/hccl_mock_api.h).

Ranks are threads of this process (the C++ side releases the GIL), so the mock's in-process worlds
really move their data; a few tests use real processes for the root-info exchange. Every expected value
(count arrays, item lists, HcclDataType codes, outputs) is computed here, independently of the C++ code.
What the NCCL backend promises too (the caller's communicator, creation and its failures, refusals before any HCCL
call, asynchronous errors) is checked for both in tests/vendor_mocks/test_communicator_contract.py.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any

import pytest
import torch
import torch.distributed as dist

# atb_ops is first-party under the project's ruff config and third-party without it: keep it apart.
# isort: off
import atb_ops  # noqa: F401  (loads the native core)
from tests.support.launch import free_port, run_spawned
from tests.vendor_mocks.hccl_mock_helpers import (
    ADOPTED,
    HCCL_DTYPE,
    HCCL_E_INTERNAL,
    HCCL_E_REMOTE,
    STREAM_BASE,
    calls_on,
    close_all,
    make_comms,
    mock,
    unique,
)
from tests.support.rank_threads import run_threads

# isort: on

pytestmark = pytest.mark.usefixtures("fresh_hccl_mock")

SEED_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.float32, torch.float16, torch.bfloat16]


# ---------------------------------------------------------------- layouts and goldens


def random_layout(n: int, rng: random.Random, max_count: int = 5, zeros: bool = True) -> dict[str, Any]:
    """A count matrix (matrix[s][d] = elements s sends d) with gapped, shuffled displacements on both sides."""
    lo = 0 if zeros else 1
    matrix = [[rng.randint(lo, max_count) for _ in range(n)] for _ in range(n)]
    ranks = []
    for r in range(n):
        send_counts = matrix[r]
        recv_counts = [matrix[s][r] for s in range(n)]
        ranks.append(
            {
                "send_counts": send_counts,
                "sdispls": gapped_displs(send_counts, rng),
                "recv_counts": recv_counts,
                "rdispls": gapped_displs(recv_counts, rng),
            }
        )
    return {"matrix": matrix, "ranks": ranks}


def gapped_displs(counts: list[int], rng: random.Random) -> list[int]:
    order = list(range(len(counts)))
    rng.shuffle(order)
    displs = [0] * len(counts)
    offset = 0
    for i in order:
        offset += rng.randint(0, 2)
        displs[i] = offset
        offset += counts[i]
    return displs


def extent(counts: list[int], displs: list[int]) -> int:
    return max([d + c for c, d in zip(counts, displs, strict=True)] + [0])


def make_input(rank: int, numel: int, dtype: torch.dtype) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.arange(numel) % (rank + 2) == 0
    return ((torch.arange(numel) * 7 + rank * 31) % 100 - 50).to(dtype)


def golden(layout: dict[str, Any], inputs: list[torch.Tensor], rank: int, out: torch.Tensor) -> torch.Tensor:
    """What rank receives: from each source s, x_s[sdispls_s[rank]:+count] at rdispls_rank[s]."""
    want = out.clone()
    mine = layout["ranks"][rank]
    for s, x in enumerate(inputs):
        theirs = layout["ranks"][s]
        count = theirs["send_counts"][rank]
        assert count == mine["recv_counts"][s]
        src = x[theirs["sdispls"][rank] : theirs["sdispls"][rank] + count]
        want[mine["rdispls"][s] : mine["rdispls"][s] + count] = src
    return want


def sentinel(numel: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.full((numel,), True if dtype == torch.bool else 99, dtype=dtype)


def exchange(comms: list[Any], layout: dict[str, Any], dtype: torch.dtype) -> tuple[list, list, list]:
    """Run one alltoallv on every rank; returns inputs, outputs and the sentinel-filled outputs before."""
    n = len(comms)
    inputs, outs, before = [], [], []
    for r in range(n):
        p = layout["ranks"][r]
        inputs.append(make_input(r, extent(p["send_counts"], p["sdispls"]) + 1, dtype))
        outs.append(sentinel(extent(p["recv_counts"], p["rdispls"]) + 1, dtype))
        before.append(outs[-1].clone())

    def one(r: int) -> None:
        p = layout["ranks"][r]
        comms[r].alltoallv(inputs[r], p["send_counts"], p["sdispls"], p["recv_counts"], p["rdispls"], outs[r])

    run_threads(n, one)
    return inputs, outs, before


# ---------------------------------------------------------------- dtype table


@pytest.mark.parametrize("dtype", list(HCCL_DTYPE))
def test_dtype_codes(dtype: torch.dtype) -> None:
    assert mock._hccl_dtype_code(torch.empty(0, dtype=dtype)) == HCCL_DTYPE[dtype]


def test_root_info_size_matches_header() -> None:
    assert mock._hccl_root_info_bytes == 4108  # HCCL_ROOT_INFO_BYTES in hccl_types.h


# ---------------------------------------------------------------- HcclAlltoAllV arguments and data


def test_alltoallv_arguments_are_uint64_element_arrays_on_the_current_stream() -> None:
    n = 3
    layout = random_layout(n, random.Random(5))
    comms = make_comms(n, device_index=-1)
    try:
        inputs, outs, _ = exchange(comms, layout, torch.float32)
        for r, comm in enumerate(comms):
            (call,) = calls_on(comm.handle, "HcclAlltoAllV")
            p = layout["ranks"][r]
            assert call["sendCounts"] == p["send_counts"]
            assert call["sdispls"] == p["sdispls"]
            assert call["recvCounts"] == p["recv_counts"]
            assert call["rdispls"] == p["rdispls"]
            assert call["sendType"] == call["recvType"] == HCCL_DTYPE[torch.float32]
            assert call["sendBuf"] == inputs[r].data_ptr()
            assert call["recvBuf"] == outs[r].data_ptr()
            # device_index -1 (CPU tensors): rank r is taken to live on device r.
            assert comm.device == r
            assert call["stream"] == STREAM_BASE + r
            assert golden(layout, inputs, r, sentinel(outs[r].numel(), torch.float32)).equal(outs[r])
    finally:
        close_all(comms)


@pytest.mark.parametrize("dtype", SEED_DTYPES + [torch.uint8, torch.bool, torch.float64])
def test_alltoallv_every_dtype_moves_exactly(dtype: torch.dtype) -> None:
    n = 2
    layout = random_layout(n, random.Random(11), zeros=False)
    comms = make_comms(n)
    try:
        inputs, outs, before = exchange(comms, layout, dtype)
        for r in range(n):
            assert golden(layout, inputs, r, before[r]).equal(outs[r]), f"rank {r} {dtype}"
            (call,) = calls_on(comms[r].handle, "HcclAlltoAllV")
            assert call["sendType"] == HCCL_DTYPE[dtype]
    finally:
        close_all(comms)


def test_seed_004_example_through_the_native_path() -> None:
    """Seed 004's two-rank example: rank0 [[0,1,2,3],[4,5,6,7]], rank1 [[0,1,2],[3,4,6]]."""
    xs = [torch.tensor([[0, 1, 2, 3], [4, 5, 6, 7]]), torch.tensor([[0, 1, 2], [3, 4, 6]])]
    params = [([2, 4], [0, 2], [2, 2], [0, 2]), ([2, 1], [0, 2], [4, 1], [0, 4])]
    want = [torch.tensor([0, 1, 0, 1]), torch.tensor([2, 3, 4, 5, 2])]
    comms = make_comms(2)
    try:
        for dtype in SEED_DTYPES:
            outs = [torch.empty(sum(p[2]), dtype=dtype) for p in params]
            run_threads(2, lambda r, d=dtype, o=outs: comms[r].alltoallv(xs[r].to(d).reshape(-1), *params[r], o[r]))
            for r in range(2):
                assert outs[r].equal(want[r].to(dtype)), (r, dtype)
    finally:
        close_all(comms)


def test_rank_receiving_nothing_still_takes_part_with_a_real_buffer() -> None:
    # Rank 1 sends to rank 0 and receives nothing: its recv tensor is empty.
    comms = make_comms(2)
    try:
        outs = [torch.empty(3), torch.empty(0)]
        sends = [torch.empty(0), torch.tensor([1.0, 2.0, 3.0])]
        layouts = [([0, 0], [0, 0], [0, 3], [0, 0]), ([3, 0], [0, 0], [0, 0], [0, 0])]
        run_threads(2, lambda r: comms[r].alltoallv(sends[r], *layouts[r], outs[r]))
        assert outs[0].tolist() == [1.0, 2.0, 3.0]
        for r in range(2):
            (call,) = calls_on(comms[r].handle, "HcclAlltoAllV")
            assert call["sendBuf"] != 0 and call["recvBuf"] != 0
    finally:
        close_all(comms)


# ---------------------------------------------------------------- the HcclBatchSendRecv path


def expected_items(rank: int, n: int, p: dict[str, list[int]], send: torch.Tensor, recv: torch.Tensor) -> list:
    es = send.element_size()
    items = []
    for step in range(1, n):
        to, frm = (rank + step) % n, (rank - step) % n
        if p["send_counts"][to]:
            items.append(("send", send.data_ptr() + p["sdispls"][to] * es, p["send_counts"][to], to))
        if p["recv_counts"][frm]:
            items.append(("recv", recv.data_ptr() + p["rdispls"][frm] * es, p["recv_counts"][frm], frm))
    return items


@pytest.mark.parametrize("value", ["p2p", "batch_send_recv"])
def test_p2p_path_item_list_and_data(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ATB_OPS_HCCL_ALLTOALLV", value)
    assert mock._hccl_alltoallv_path() == "HcclBatchSendRecv"
    n = 4
    layout = random_layout(n, random.Random(3))
    comms = make_comms(n)
    try:
        inputs, outs, before = exchange(comms, layout, torch.int16)
        assert mock._hccl_mock_calls("HcclAlltoAllV") == []
        for r in range(n):
            assert golden(layout, inputs, r, before[r]).equal(outs[r]), f"rank {r}"
            want = expected_items(r, n, layout["ranks"][r], inputs[r], outs[r])
            got = calls_on(comms[r].handle, "HcclBatchSendRecv")
            if not want:
                assert got == []  # nothing to exchange: HCCL is not called
                continue
            (call,) = got
            assert call["stream"] == STREAM_BASE + r
            assert [(i["type"], i["buf"], i["count"], i["remoteRank"]) for i in call["items"]] == want
            assert {i["dataType"] for i in call["items"]} == {HCCL_DTYPE[torch.int16]}
    finally:
        close_all(comms)


def test_p2p_path_avoids_the_reported_alltoallv_zeros(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mock reproduces the CANN 8.3 report (HcclAlltoAllV gives zeros on >2 ranks); p2p is right."""
    mock._hccl_mock_configure(stream_base=STREAM_BASE, zeros_bug_min_ranks=3)
    n = 3
    layout = random_layout(n, random.Random(8), zeros=False)
    comms = make_comms(n)
    try:
        inputs, outs, before = exchange(comms, layout, torch.int32)
        assert any(not golden(layout, inputs, r, before[r]).equal(outs[r]) for r in range(n))
    finally:
        close_all(comms)
    # The path is part of a communicator's options, read when it is created.
    monkeypatch.setenv("ATB_OPS_HCCL_ALLTOALLV", "p2p")
    comms = make_comms(n)
    try:
        inputs, outs, before = exchange(comms, layout, torch.int32)
        for r in range(n):
            assert golden(layout, inputs, r, before[r]).equal(outs[r])
    finally:
        close_all(comms)


def test_bad_path_variable_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATB_OPS_HCCL_ALLTOALLV", "fast")
    with pytest.raises(RuntimeError, match=r"^ERROR_INVALID_PARAM: ATB_OPS_HCCL_ALLTOALLV .*'fast'"):
        mock._hccl_alltoallv_path()


# ---------------------------------------------------------------- allgather and barrier


def test_allgather_arguments_and_data() -> None:
    n = 3
    comms = make_comms(n)
    try:
        xs = [torch.arange(4, dtype=torch.bfloat16) + 10 * r for r in range(n)]
        outs = [torch.zeros(n * 4, dtype=torch.bfloat16) for _ in range(n)]
        run_threads(n, lambda r: comms[r].allgather(xs[r], outs[r]))
        for r in range(n):
            assert outs[r].equal(torch.cat(xs))
            (call,) = calls_on(comms[r].handle, "HcclAllGather")
            assert call["count"] == 4 and call["dataType"] == HCCL_DTYPE[torch.bfloat16]
            assert call["stream"] == STREAM_BASE + r
    finally:
        close_all(comms)


def test_barrier_waits_for_the_stream() -> None:
    comms = make_comms(2)
    try:
        run_threads(2, lambda r: comms[r].barrier())
        for comm in comms:
            assert len(calls_on(comm.handle, "HcclBarrier")) == 1
        assert len(mock._hccl_mock_calls("aclrtRecordEvent")) == 2
        assert mock._hccl_mock_live_events() == 0
    finally:
        close_all(comms)


# ---------------------------------------------------------------- communicator ownership


def test_adopted_communicator_moves_the_callers_data() -> None:
    """The caller's handles carry the alltoallv (the contract's part, handles kept and never destroyed, is
    test_communicator_contract.py's)."""
    handles = mock._hccl_mock_user_comms(2)
    comms = run_threads(2, lambda r: mock._HcclMockCommunicator(r, 2, hccl_comm=handles[r]))
    try:
        assert [c.origin for c in comms] == [ADOPTED, ADOPTED]
        outs = [torch.zeros(2), torch.zeros(2)]
        run_threads(2, lambda r: comms[r].alltoallv(torch.tensor([r, r + 0.5]), [1, 1], [0, 1], [1, 1], [0, 1],
                                                    outs[r]))
        assert outs[0].tolist() == [0.0, 1.0] and outs[1].tolist() == [0.5, 1.5]
    finally:
        close_all(comms)


def test_created_communicator_names_the_init_that_made_it() -> None:
    comms = make_comms(2)
    try:
        assert {c.origin for c in comms} == {"HcclCommInitRootInfo"}
    finally:
        close_all(comms)


def test_multi_thread_mode_makes_all_comms_with_one_init_all() -> None:
    n = 3
    domain = unique("threads")
    devices = [5, 3, 4]
    comms = run_threads(
        n, lambda r: mock._HcclMockCommunicator(r, n, comm_mode=1, comm_domain=domain, device_index=devices[r])
    )
    try:
        (init,) = mock._hccl_mock_calls("HcclCommInitAll")
        assert init["nDevices"] == n and init["devices"] == devices
        assert mock._hccl_mock_calls("HcclGetRootInfo") == []
        assert len({c.handle for c in comms}) == n
        assert [c.device for c in comms] == devices
        layout = random_layout(n, random.Random(2))
        inputs, outs, before = exchange(comms, layout, torch.float16)
        for r in range(n):
            assert golden(layout, inputs, r, before[r]).equal(outs[r])
            assert calls_on(comms[r].handle, "HcclAlltoAllV")[0]["stream"] == STREAM_BASE + devices[r]
        handles = [c.handle for c in comms]
        comms[0].close()
        comms[1].close()
        # The group's communicators go together, with the last rank.
        assert [mock._hccl_mock_destroy_count(h) for h in handles] == [0, 0, 0]
        comms[2].close()
        assert [mock._hccl_mock_destroy_count(h) for h in handles] == [1, 1, 1]
    finally:
        close_all(comms)


def test_multi_thread_mode_names_the_rank_that_never_came(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATB_OPS_TIMEOUT", "0.3")
    with pytest.raises(RuntimeError, match=r"^ERROR_COMM_TIMEOUT: hccl multi-thread .*rank\(s\) 1 never joined"):
        mock._HcclMockCommunicator(0, 2, comm_mode=1, comm_domain=unique("threads"))
    assert mock._hccl_mock_calls("HcclCommInitAll") == []


# ---------------------------------------------------------------- root info and rank tables


def test_root_info_made_once_by_root_and_shared_byte_for_byte() -> None:
    n = 3
    job = unique("job")
    comms = run_threads(n, lambda r: mock._HcclMockCommunicator(r, n, rank_root=1, job_key=job, device_index=r + 4))
    try:
        (made,) = mock._hccl_mock_calls("HcclGetRootInfo")
        assert len(made["rootInfo"]) == 4108
        inits = sorted(mock._hccl_mock_calls("HcclCommInitRootInfo"), key=lambda c: c["rank"])
        assert [c["rank"] for c in inits] == [0, 1, 2]
        assert all(c["nRanks"] == n and c["rootInfo"] == made["rootInfo"] for c in inits)
        # Each rank binds its communicator on its own device.
        assert [c["device"] for c in inits] == [4, 5, 6]
    finally:
        close_all(comms)


def test_rank_table_selects_init_cluster_info(tmp_path) -> None:
    table = tmp_path / "rank_table.json"
    table.write_text(json.dumps({"version": "1.0", "server_count": "1"}))
    mock._hccl_mock_configure(stream_base=STREAM_BASE, cluster_rank_size=2)
    comms = run_threads(2, lambda r: mock._HcclMockCommunicator(r, 2, rank_table_file=str(table)))
    try:
        calls = sorted(mock._hccl_mock_calls("HcclCommInitClusterInfo"), key=lambda c: c["rank"])
        assert [(c["rankTableFile"].decode(), c["rank"]) for c in calls] == [(str(table), 0), (str(table), 1)]
        assert mock._hccl_mock_calls("HcclGetRootInfo") == [] and mock._hccl_mock_calls("HcclCommInitRootInfo") == []
        assert {c.origin for c in comms} == {"HcclCommInitClusterInfo"}
        handles = [c.handle for c in comms]
    finally:
        close_all(comms)
    assert [mock._hccl_mock_destroy_count(h) for h in handles] == [1, 1]


def test_handle_wins_over_rank_table(tmp_path) -> None:
    table = tmp_path / "rank_table.json"
    table.write_text("{}")
    (handle,) = mock._hccl_mock_user_comms(1)
    comm = mock._HcclMockCommunicator(0, 1, hccl_comm=handle, rank_table_file=str(table))
    try:
        assert comm.origin == "adopted hcclComm"
        assert mock._hccl_mock_calls("HcclCommInitClusterInfo") == []
    finally:
        comm.close()


def test_missing_rank_table_is_a_param_error(tmp_path) -> None:
    with pytest.raises(RuntimeError, match=r"^ERROR_INVALID_PARAM: .*rankTableFile"):
        mock._HcclMockCommunicator(0, 2, rank_table_file=str(tmp_path / "absent.json"))


def _process_rank(rank: int, n: int, domain: str, init_url: str | None, queue: Any) -> None:
    """One rank in its own process: makes a mock communicator and reports what HCCL was handed."""
    try:
        if init_url:
            # A job id of its own per rank: the node-local rendezvous could never meet, only the store can.
            os.environ["ATB_OPS_JOB_ID"] = f"{domain}-rank{rank}-alone"
            dist.init_process_group("gloo", init_method=init_url, rank=rank, world_size=n)
        comm = mock._HcclMockCommunicator(rank, n, comm_domain=domain)
        (init,) = mock._hccl_mock_calls("HcclCommInitRootInfo")
        made = mock._hccl_mock_calls("HcclGetRootInfo")
        stored = None
        if init_url:
            dist.barrier()
            # The root removed its key once every rank had read it.
            stored = dist.distributed_c10d._get_default_store().check([f"atb_ops/hccl/{domain}/{n}/0/0"])
        comm.close()
        queue.put((rank, "", (init["rootInfo"], [m["rootInfo"] for m in made], stored)))
        if init_url:
            dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001  (reported to the parent, which fails the test)
        queue.put((rank, repr(e), None))


@pytest.mark.parametrize("channel", ["node-local", "store"])
def test_root_info_exchange_across_processes(channel: str) -> None:
    n = 2
    domain = unique("procs")
    url = f"tcp://127.0.0.1:{free_port()}" if channel == "store" else None
    got = run_spawned(_process_rank, n, (domain, url), timeout_s=120)  # fails naming a rank's error or exit status
    init, made, stored = zip(*got, strict=True)
    root_made = made[0]
    assert len(root_made) == 1 and made[1] == []  # only the root called HcclGetRootInfo
    assert init[0] == init[1] == root_made[0]
    if channel == "store":
        assert stored[0] is False and stored[1] is False


# ---------------------------------------------------------------- errors, async errors, waiting


def test_hccl_failure_names_function_code_string_and_place() -> None:
    mock._hccl_mock_configure(stream_base=STREAM_BASE, fail={"HcclAlltoAllV": HCCL_E_INTERNAL})
    (comm,) = make_comms(1)
    try:
        with pytest.raises(RuntimeError) as e:
            comm.alltoallv(torch.ones(2), [2], [0], [2], [0], torch.zeros(2))
        msg = str(e.value)
        assert msg.startswith("ERROR_HCCL_FAIL: HcclAlltoAllV returned 4 (HCCL_E_INTERNAL: mock HCCL says")
        assert "rank 0 of 1" in msg and "hccl_communicator.cpp:" in msg
    finally:
        comm.close()


def test_async_error_is_found_by_polling_and_leaves_no_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """How the blocking wait finds HCCL's asynchronous error (the contract's part, the communicator unusable
    afterwards, is test_communicator_contract.py's)."""
    monkeypatch.setenv("ATB_OPS_HCCL_BLOCKING", "1")
    # The stream never completes; HCCL reports a remote fault on the third poll.
    mock._hccl_mock_configure(
        stream_base=STREAM_BASE, event_polls_to_complete=-1, async_error_after_polls=2, async_error_code=HCCL_E_REMOTE
    )
    (comm,) = make_comms(1)
    try:
        with pytest.raises(RuntimeError, match=r"^ERROR_HCCL_FAIL: hccl alltoallv .*asynchronous error 21"):
            comm.alltoallv(torch.ones(2), [2], [0], [2], [0], torch.zeros(2))
        assert len(calls_on(comm.handle, "HcclGetCommAsyncError")) == 3
        assert mock._hccl_mock_live_events() == 0
    finally:
        comm.close()


def test_blocking_wait_polls_until_the_event_completes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATB_OPS_HCCL_BLOCKING", "1")
    mock._hccl_mock_configure(stream_base=STREAM_BASE, event_polls_to_complete=3)
    (comm,) = make_comms(1)
    try:
        out = torch.zeros(2)
        comm.alltoallv(torch.tensor([4.0, 5.0]), [2], [0], [2], [0], out)
        assert out.tolist() == [4.0, 5.0]
        (record,) = mock._hccl_mock_calls("aclrtRecordEvent")
        assert record["stream"] == STREAM_BASE + 0
        assert len(mock._hccl_mock_calls("aclrtQueryEventStatus")) == 4
        assert len(calls_on(comm.handle, "HcclGetCommAsyncError")) == 3
        assert mock._hccl_mock_live_events() == 0
    finally:
        comm.close()


def test_non_blocking_mode_does_not_wait() -> None:
    (comm,) = make_comms(1)
    try:
        comm.alltoallv(torch.ones(2), [2], [0], [2], [0], torch.zeros(2))
        assert mock._hccl_mock_calls("aclrtCreateEvent") == []
    finally:
        comm.close()


def test_silent_hang_becomes_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATB_OPS_HCCL_BLOCKING", "1")
    monkeypatch.setenv("ATB_OPS_TIMEOUT", "0.2")
    mock._hccl_mock_configure(stream_base=STREAM_BASE, event_polls_to_complete=-1)
    (comm,) = make_comms(1)
    try:
        with pytest.raises(RuntimeError, match=r"^ERROR_COMM_TIMEOUT: hccl alltoallv .*ATB_OPS_TIMEOUT=0.2"):
            comm.alltoallv(torch.ones(2), [2], [0], [2], [0], torch.zeros(2))
        assert mock._hccl_mock_live_events() == 0
    finally:
        comm.close()


def test_device_is_set_for_the_collective_and_restored() -> None:
    comm = mock._HcclMockCommunicator(0, 1, job_key=unique("job"), device_index=6)
    try:
        mock._hccl_mock_reset()
        mock._hccl_mock_configure(stream_base=STREAM_BASE)
        comm.alltoallv(torch.ones(1), [1], [0], [1], [0], torch.zeros(1))
        sets = [c["device"] for c in mock._hccl_mock_calls("aclrtSetDevice")]
        assert sets == [6, 0]  # switched to the communicator's device, then back to this thread's
        (call,) = mock._hccl_mock_calls("HcclAlltoAllV")
        assert call["stream"] == STREAM_BASE + 6
    finally:
        comm.close()
