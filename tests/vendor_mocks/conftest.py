"""Fixtures of the vendor mock tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def fresh_hccl_mock(monkeypatch: pytest.MonkeyPatch):
    """The HCCL mock from empty (call log, default options) with no path, blocking or timeout variable set; emptied
    again afterwards. The mock is process-wide: every test that drives it starts here."""
    from tests.vendor_mocks import hccl_mock_helpers  # imported here: it skips where the mocks are not built

    for name in ("ATB_OPS_HCCL_ALLTOALLV", "ATB_OPS_HCCL_BLOCKING", "ATB_OPS_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    hccl_mock_helpers.reset()
    yield
    hccl_mock_helpers.mock._hccl_mock_reset()
