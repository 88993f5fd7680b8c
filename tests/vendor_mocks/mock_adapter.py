"""What the communicator contract (test_communicator_contract.py) needs from one vendor's recording mock.

Each vendor's mock has its own shape: HCCL's is one process-wide log and communicators that move real data between
rank threads; NCCL's is one mock per rank that logs calls and moves nothing. An adapter (hccl_adapter.py,
nccl_adapter.py) turns each into these verbs, and names what its vendor's messages and calls are; the contract's
assertions are written once, against them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import torch


@dataclass
class MockRank:
    """One rank's communicator over a mock: the mock's object, and the vendor handle it had when made (closing
    it may forget the handle)."""

    native: Any
    handle: int


class MockedVendor(Protocol):
    """One vendor backend over its recording mock."""

    name: str  # the backend ("hccl", "nccl"): ERROR_<NAME>_FAIL, backend '<name>', rendezvous purpose
    id_length: int  # the length of the root's id as the log records it
    shape_queries: tuple[str, str]  # the vendor calls that read an adopted handle's size and rank, in their order
    failed_creation_says: str  # regex: the error of `create_failing`, after "ERROR_<NAME>_FAIL: "
    frees_failed_creation_with: str  # the call kind ("destroy", "abort") that frees what a failed creation made
    async_error_says: str  # regex: the error of the collective that meets the asynchronous error
    unusable_says: str  # regex: the error of a collective on a communicator broken before

    def caller_handles(self, size: int) -> list[int]:
        """Handles of one world of `size` ranks that the caller made (hcclComm), in rank order."""

    def adopt(self, handles: list[int]) -> list[MockRank]:
        """Every rank r of len(handles) adopts handles[r]."""

    def adopt_laying_out_every_transfer(self, handles: list[int]) -> list[MockRank]:
        """As `adopt`, on the alltoallv path where the backend hands the vendor each transfer itself (and so checks
        every count before the vendor sees one)."""

    def adopt_mismatched(self, handle_rank: int, handle_size: int, rank: int, size: int) -> None:
        """Adopts, as rank `rank` of `size`, a caller's handle that is rank handle_rank of handle_size (raises)."""

    def create(self, size: int) -> list[MockRank]:
        """Every rank of a new job makes its own communicator (rank 0 is the root)."""

    def create_rank(self, rank: int, size: int, job: str, domain: str, timeout_s: float) -> MockRank:
        """Rank `rank` alone makes its communicator of (job, commDomain), waiting at most timeout_s."""

    def create_failing(self) -> None:
        """A one-rank creation during which the vendor fails after it handed back a communicator (raises)."""

    def create_failing_asynchronously(self) -> MockRank:
        """A one-rank communicator whose next collective meets an asynchronous error from the vendor."""

    def owns(self, rank: MockRank) -> bool:
        """Whether atb_ops made the communicator (else it is the caller's)."""

    def alltoallv(self, rank: MockRank, send_counts: list[int], sdispls: list[int], recv_counts: list[int],
                  rdispls: list[int]) -> None:
        """One rank's alltoallv of float32 elements (its peers do not take part)."""

    def alltoallv_equal_splits(self, ranks: list[MockRank]) -> None:
        """Every rank sends one element to every rank, all at once."""

    def allgather(self, ranks: list[MockRank], numel: int) -> None:
        """Every rank gathers numel float32 elements from every rank, all at once."""

    def check_dtype(self, dtype: torch.dtype) -> None:
        """Asks the backend to move a tensor of `dtype` (raises where it cannot)."""

    def release(self, ranks: list[MockRank]) -> None:
        """Lets go of every rank's communicator."""

    def calls(self, kind: str) -> list[dict[str, Any]]:
        """Every logged call of a kind: "draw_id" (the root's id), "init", "destroy" or "abort"."""

    def call_names(self, rank: MockRank) -> list[str]:
        """The vendor functions called on this rank's communicator, oldest first."""

    def id_of(self, call: dict[str, Any]) -> Any:
        """The root's id that a "draw_id" or "init" call carries."""

    def handles_named(self) -> list[int]:
        """Every communicator handle the logged calls name."""

    def frees(self, rank: MockRank) -> int:
        """How often the vendor was asked to free this rank's communicator (destroyed or aborted)."""
