"""The recording mock of NcclApi (atb_ops._testing._NcclMock, tests/native/nccl_mock_api.h) as the NCCL tests drive
it: one mock per rank, each logging the NCCL calls its communicator makes; no GPU, no libnccl."""

from __future__ import annotations

import os
import uuid

import pytest

from tests.support.backends import TESTING_MOCKS

mock_lib = pytest.importorskip("atb_ops._testing", reason=TESTING_MOCKS)

# ncclResult_t values, from nccl.h's documented enum.
NCCL_SYSTEM_ERROR = 2
NCCL_INVALID_USAGE = 5
NCCL_REMOTE_ERROR = 6


def ops(mock: mock_lib._NcclMock) -> list[str]:
    """The names of the NCCL calls the mock logged, oldest first."""
    return [c["op"] for c in mock.calls()]


def unique_job() -> str:
    """A job key no other test (or test run) shares, so rendezvous files never meet."""
    return f"pytest-nccl-{os.getpid()}-{uuid.uuid4().hex}"


def adopted(rank: int, size: int, handle: int = 0xADD0, timeout_s: float = 5.0) -> mock_lib._NcclMock:
    """A mock whose communicator is the caller's `handle` (rank of size), with an empty call log."""
    mock = mock_lib._NcclMock()
    mock.set_comm_shape(rank, size)
    mock.adopt(handle, rank, size, timeout_s=timeout_s)
    mock.clear_calls()
    return mock


def created(rank: int = 0, size: int = 1, timeout_s: float = 5.0) -> mock_lib._NcclMock:
    """A mock whose communicator it made itself (rank `rank` is the root), its creation's calls logged."""
    mock = mock_lib._NcclMock()
    mock.create(rank, size, root=rank, job_key=unique_job(), timeout_s=timeout_s)
    return mock
