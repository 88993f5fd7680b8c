"""The hccl backend over the recording mock of HcclApi, as the communicator contract drives it (mock_adapter.py).

Its ranks are threads of this process (the mock's in-process worlds move real data); its call log is one for the
process, emptied before every test by the fresh_hccl_mock fixture."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tests.support.rank_threads import run_threads
from tests.vendor_mocks.hccl_mock_helpers import (
    ADOPTED,
    HCCL_E_INTERNAL,
    HCCL_E_REMOTE,
    STREAM_BASE,
    make_comms,
    mock,
    unique,
)
from tests.vendor_mocks.mock_adapter import MockRank

# The HCCL functions behind each kind of call the contract reads (hccl.h); HCCL has no abort.
FUNCTIONS = {
    "draw_id": ("HcclGetRootInfo",),
    "init": ("HcclCommInitRootInfo", "HcclCommInitClusterInfo", "HcclCommInitAll"),
    "destroy": ("HcclCommDestroy",),
    "abort": (),
}


class HcclAdapter:
    """MockedVendor for the hccl backend."""

    name = "hccl"
    id_length = 4108  # HCCL_ROOT_INFO_BYTES in hccl_types.h
    shape_queries = ("HcclGetRankSize", "HcclGetRankId")
    failed_creation_says = r"HcclGetRankId returned 4 \(HCCL_E_INTERNAL"
    frees_failed_creation_with = "destroy"
    async_error_says = r"hccl alltoallv .*asynchronous error 21 \(HCCL_E_REMOTE"
    unusable_says = r"hccl allgather: .*failed earlier and is unusable"

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        # HCCL's settings are variables read when a communicator is made: set through monkeypatch, undone after.
        self._env = monkeypatch

    def caller_handles(self, size: int) -> list[int]:
        return list(mock._hccl_mock_user_comms(size))

    def adopt(self, handles: list[int]) -> list[MockRank]:
        n = len(handles)
        comms = run_threads(n, lambda r: mock._HcclMockCommunicator(r, n, hccl_comm=handles[r]))
        return [MockRank(c, c.handle) for c in comms]

    def adopt_laying_out_every_transfer(self, handles: list[int]) -> list[MockRank]:
        # HcclAlltoAllV takes the whole layout (HCCL checks it); HcclBatchSendRecv takes transfers the backend
        # made, so the backend checks the counts first. The path is read when a communicator is made.
        self._env.setenv("ATB_OPS_HCCL_ALLTOALLV", "p2p")
        return self.adopt(handles)

    def adopt_mismatched(self, handle_rank: int, handle_size: int, rank: int, size: int) -> None:
        handle = mock._hccl_mock_user_comms(handle_size)[handle_rank]
        mock._HcclMockCommunicator(rank, size, hccl_comm=handle)

    def create(self, size: int) -> list[MockRank]:
        return [MockRank(c, c.handle) for c in make_comms(size)]

    def create_rank(self, rank: int, size: int, job: str, domain: str, timeout_s: float) -> MockRank:
        self._env.setenv("ATB_OPS_TIMEOUT", str(timeout_s))
        comm = mock._HcclMockCommunicator(rank, size, job_key=job, comm_domain=domain)
        return MockRank(comm, comm.handle)

    def create_failing(self) -> None:
        mock._hccl_mock_configure(stream_base=STREAM_BASE, fail={"HcclGetRankId": HCCL_E_INTERNAL})
        mock._HcclMockCommunicator(0, 1, job_key=unique("job"))

    def create_failing_asynchronously(self) -> MockRank:
        # The host waits for the stream (blocking); the stream never completes, and HCCL reports a remote fault
        # on the third poll.
        self._env.setenv("ATB_OPS_HCCL_BLOCKING", "1")
        mock._hccl_mock_configure(stream_base=STREAM_BASE, event_polls_to_complete=-1, async_error_after_polls=2,
                                  async_error_code=HCCL_E_REMOTE)
        (rank,) = self.create(1)
        return rank

    def owns(self, rank: MockRank) -> bool:
        return rank.native.origin != ADOPTED

    def alltoallv(self, rank: MockRank, send_counts: list[int], sdispls: list[int], recv_counts: list[int],
                  rdispls: list[int]) -> None:
        send = torch.ones(max(d + c for c, d in zip(send_counts, sdispls, strict=True)))
        recv = torch.zeros(max(d + c for c, d in zip(recv_counts, rdispls, strict=True)))
        rank.native.alltoallv(send, send_counts, sdispls, recv_counts, rdispls, recv)

    def alltoallv_equal_splits(self, ranks: list[MockRank]) -> None:
        n = len(ranks)
        ones, displs = [1] * n, list(range(n))
        run_threads(n, lambda r: ranks[r].native.alltoallv(torch.full((n,), float(r)), ones, displs, ones, displs,
                                                          torch.zeros(n)))

    def allgather(self, ranks: list[MockRank], numel: int) -> None:
        n = len(ranks)
        run_threads(n, lambda r: ranks[r].native.allgather(torch.ones(numel), torch.zeros(numel * n)))

    def check_dtype(self, dtype: torch.dtype) -> None:
        mock._hccl_dtype_code(torch.empty(0, dtype=dtype))

    def release(self, ranks: list[MockRank]) -> None:
        for rank in ranks:
            rank.native.close()

    def calls(self, kind: str) -> list[dict[str, Any]]:
        return [c for c in mock._hccl_mock_calls() if c["fn"] in FUNCTIONS[kind]]

    def call_names(self, rank: MockRank) -> list[str]:
        return [c["fn"] for c in mock._hccl_mock_calls() if c["comm"] == rank.handle]

    def id_of(self, call: dict[str, Any]) -> Any:
        return call["rootInfo"]

    def handles_named(self) -> list[int]:
        return sorted({c["comm"] for c in mock._hccl_mock_calls() if c["comm"]})

    def frees(self, rank: MockRank) -> int:
        return mock._hccl_mock_destroy_count(rank.handle)
