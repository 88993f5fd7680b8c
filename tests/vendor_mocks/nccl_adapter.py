"""The nccl backend over the recording mock of NcclApi, as the communicator contract drives it (mock_adapter.py).

One mock per rank, each with its own call log; the mock moves no data, so a rank's collective needs no peer. The
adapter keeps every mock it made, so the contract can read calls of a creation that raised."""

from __future__ import annotations

from typing import Any

import torch

from tests.support.rank_threads import run_threads
from tests.vendor_mocks.mock_adapter import MockRank
from tests.vendor_mocks.nccl_mock_helpers import (
    NCCL_REMOTE_ERROR,
    NCCL_SYSTEM_ERROR,
    created,
    mock_lib,
    unique_job,
)

# The mock's names of the NCCL calls behind each kind the contract reads.
OPS = {"draw_id": ("getUniqueId",), "init": ("commInitRank",), "destroy": ("commDestroy",), "abort": ("commAbort",)}


class NcclAdapter:
    """MockedVendor for the nccl backend."""

    name = "nccl"
    id_length = 256  # ncclUniqueId's 128 bytes, logged in hex
    shape_queries = ("commUserRank", "commCount")
    failed_creation_says = r".*ncclCommInitRankConfig failed with ncclResult 2"
    frees_failed_creation_with = "abort"
    async_error_says = r".*ncclResult 6.*was aborted"
    unusable_says = r".*unusable since"

    def __init__(self) -> None:
        self._mocks: list[mock_lib._NcclMock] = []

    def _new_mock(self) -> mock_lib._NcclMock:
        mock = mock_lib._NcclMock()
        self._mocks.append(mock)
        return mock

    def caller_handles(self, size: int) -> list[int]:
        return [0xADD0 + r for r in range(size)]  # any value: the mock answers for whatever handle it is given

    def adopt(self, handles: list[int]) -> list[MockRank]:
        ranks = []
        for r, handle in enumerate(handles):
            mock = self._new_mock()
            mock.set_comm_shape(r, len(handles))
            mock.adopt(handle, r, len(handles))
            ranks.append(MockRank(mock, handle))
        return ranks

    def adopt_laying_out_every_transfer(self, handles: list[int]) -> list[MockRank]:
        return self.adopt(handles)  # NCCL has no alltoallv: the backend always hands it each send and receive

    def adopt_mismatched(self, handle_rank: int, handle_size: int, rank: int, size: int) -> None:
        mock = self._new_mock()
        mock.set_comm_shape(handle_rank, handle_size)
        mock.adopt(0xFEED, rank, size)

    def create(self, size: int) -> list[MockRank]:
        job = unique_job()
        mocks = [self._new_mock() for _ in range(size)]
        run_threads(size, lambda r: mocks[r].create(r, size, job_key=job))
        return [MockRank(m, m.handle) for m in mocks]

    def create_rank(self, rank: int, size: int, job: str, domain: str, timeout_s: float) -> MockRank:
        mock = self._new_mock()
        mock.create(rank, size, root=0, comm_domain=domain, job_key=job, timeout_s=timeout_s)
        return MockRank(mock, mock.handle)

    def create_failing(self) -> None:
        mock = self._new_mock()
        mock.fail_on("commInitRank", 0, NCCL_SYSTEM_ERROR)
        mock.create(0, 1, job_key=unique_job())

    def create_failing_asynchronously(self) -> MockRank:
        mock = created()
        self._mocks.append(mock)
        mock.set_async_error(NCCL_REMOTE_ERROR)
        return MockRank(mock, mock.handle)

    def owns(self, rank: MockRank) -> bool:
        return rank.native.owned

    def alltoallv(self, rank: MockRank, send_counts: list[int], sdispls: list[int], recv_counts: list[int],
                  rdispls: list[int]) -> None:
        rank.native.alltoallv(send_counts, sdispls, recv_counts, rdispls, torch.float32)

    def alltoallv_equal_splits(self, ranks: list[MockRank]) -> None:
        ones, displs = [1] * len(ranks), list(range(len(ranks)))
        for rank in ranks:
            rank.native.alltoallv(ones, displs, ones, displs, torch.float32)

    def allgather(self, ranks: list[MockRank], numel: int) -> None:
        for rank in ranks:
            rank.native.allgather(numel, torch.float32)

    def check_dtype(self, dtype: torch.dtype) -> None:
        mock_lib._nccl_mock_alltoallv(0, 1, [1], [0], [1], [0], dtype)

    def release(self, ranks: list[MockRank]) -> None:
        for rank in ranks:
            rank.native.release()

    def calls(self, kind: str) -> list[dict[str, Any]]:
        return [c for m in self._mocks for c in m.calls() if c["op"] in OPS[kind]]

    def call_names(self, rank: MockRank) -> list[str]:
        return [c["op"] for c in rank.native.calls()]

    def id_of(self, call: dict[str, Any]) -> Any:
        return call["id"]

    def handles_named(self) -> list[int]:
        return sorted({c["comm"] for m in self._mocks for c in m.calls() if c.get("comm")})

    def frees(self, rank: MockRank) -> int:
        return sum(c["op"] in OPS["destroy"] + OPS["abort"] for c in rank.native.calls())
