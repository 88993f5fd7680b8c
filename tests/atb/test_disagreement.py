"""Ranks of one communicator that disagree about a call: every rank raises the same clear error naming the
first field that differs and each rank's value, on every CPU backend; never another call's data, never an
abort (the contract's Communicators section; issue 28 cases 1 and 4)."""

from __future__ import annotations

import uuid

import pytest

from tests.atb import disagreement_tasks as tasks
from tests.support.backends import CPU_BACKENDS


def _domain() -> str:
    return "disagree-" + uuid.uuid4().hex[:8]


def _what_differs(message: str) -> str:
    """The part naming the field and every rank's value (backend "hccl" wraps it in HCCL's error text, which
    names the reporting rank)."""
    start = message.index("the ranks called different things (")
    return message[start : message.index("); every rank must issue", start)]


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("other", ["AllToAllOperation", "AllToAllVOperation", "AllToAllVV2Operation"])
def test_calls_in_different_orders_raise_on_every_rank(rank_pools, backend, other):
    reports = rank_pools(2).run(tasks.different_order, backend, _domain(), other)
    for rank, report in enumerate(reports):
        for status, value in report["calls"]:
            assert status == "error", f"rank {rank} got data from a call its peer did not make: {value}"
            assert value.startswith("ERROR_INVALID_PARAM"), value
            assert "operation differs" in value, value
            assert "AllGatherOperation" in value and other in value, value
    # Both ranks raised the same message for the same call.
    assert _what_differs(reports[0]["calls"][0][1]) == _what_differs(reports[1]["calls"][0][1])
    # The communicator stays usable: the next call, issued alike, moves the right data.
    for status, value in (r["after"] for r in reports):
        assert status == "ok", value
        assert value == [float(v) for v in range(4)] + [1000.0 + v for v in range(4)]


CASES = {
    "allreduce-size": ("ERROR_INVALID_TENSOR_SIZE", "size differs: rank 0: 1000 elements; rank 1: 1500 elements"),
    "allreduce-dtype": ("ERROR_INVALID_TENSOR_DTYPE", "dtype differs: rank 0: Float; rank 1: Int"),
    "allreduce-op": ("ERROR_INVALID_PARAM", "reduce op differs: rank 0: sum; rank 1: max"),
    "allgather-size": ("ERROR_INVALID_TENSOR_SIZE", "size differs: rank 0: 1000 elements; rank 1: 1200 elements"),
    "broadcast-size": ("ERROR_INVALID_TENSOR_SIZE", "size differs: rank 0: 1000 elements; rank 1: 1200 elements"),
    "broadcast-root": ("ERROR_INVALID_PARAM", "root differs: rank 0: 0; rank 1: 1"),
}


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_arguments_that_differ_raise_the_same_error_everywhere(rank_pools, backend, case):
    status, detail = CASES[case]
    if backend == "hccl":
        # HCCL's API returns HCCL_E_PARA around the same check (sizes in the caller's elements, as elsewhere).
        status = "ERROR_INVALID_PARAM: Hccl"
    results = rank_pools(2).run(tasks.reduction_disagreement, backend, _domain(), case)
    for rank, (kind, value) in enumerate(results):
        assert kind == "error", f"rank {rank} returned {value!r} although the ranks disagreed"
        assert value.startswith(status) and detail in value, value
    assert _what_differs(results[0][1]) == _what_differs(results[1][1])
