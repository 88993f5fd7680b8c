"""The recording mock of HcclApi (atb_ops._testing, tests/native/hccl_mock_api.h) as the HCCL tests drive it: its
HCCL codes written out from hccl_types.h, communicators made as ranks make them, its call log read per handle.

The mock's state (call log, options, worlds) is process-wide: tests start from `reset()` (the fresh_hccl_mock
fixture, tests/vendor_mocks/conftest.py)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import torch

from tests.support.backends import TESTING_MOCKS
from tests.support.rank_threads import run_threads

mock = pytest.importorskip("atb_ops._testing", reason=TESTING_MOCKS)

# HcclDataType values from hccl_types.h (CANN 8.x), written out here so the test does not trust the code.
HCCL_DTYPE = {
    torch.int8: 0,
    torch.int16: 1,
    torch.int32: 2,
    torch.float16: 3,
    torch.float32: 4,
    torch.int64: 5,
    torch.uint8: 7,
    torch.float64: 10,
    torch.bfloat16: 11,
    torch.bool: 7,  # moved as uint8 bytes
}
STREAM_BASE = 0x7000  # the mock's current stream of device d is STREAM_BASE + d
# HcclResult values from hccl_types.h.
HCCL_E_INTERNAL = 4
HCCL_E_REMOTE = 21
ADOPTED = "adopted hcclComm"  # a communicator's origin when the caller made it


def reset() -> None:
    """An empty call log, no worlds, and the options every test starts from."""
    mock._hccl_mock_reset()
    mock._hccl_mock_configure(stream_base=STREAM_BASE, collective_timeout_ms=20000)


def unique(prefix: str) -> str:
    """A name no other test (or run) uses: job keys and commDomains that must never meet another's."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def make_comms(n: int, **kwargs: Any) -> list[Any]:
    """n mock communicators of one new job, made concurrently, one per thread, as n ranks would.

    Args:
        n: the world size.
        kwargs: more arguments of _HcclMockCommunicator (device_index, ...).

    Returns:
        The communicators, in rank order.
    """
    job = unique("job")
    return run_threads(n, lambda r: mock._HcclMockCommunicator(r, n, job_key=job, **kwargs))


def close_all(comms: list[Any]) -> None:
    """Closes every communicator (closing one twice is allowed)."""
    for c in comms:
        c.close()


def calls_on(handle: int, fn: str) -> list[dict[str, Any]]:
    """The logged calls of HCCL function `fn` on communicator `handle`, oldest first."""
    return [c for c in mock._hccl_mock_calls(fn) if c["comm"] == handle]
