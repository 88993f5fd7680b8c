"""The hccl backend against HCCL's documented C API, through the recording mock (no HCCL-on-CPU code runs).

HCCL on CPU (csrc/emulated/hccl/) and the hccl backend are written in this project, so a misreading of HCCL's API
(counts in bytes instead of elements, displacements in bytes, send/recv items swapped, reading results before
the stream is done) would be shared by both and pass everywhere else. These expectations are written from the
public CANN HCCL API reference (hiascend.com, CANN 8.0 "HCCL API reference", C interfaces), one entry per
function, and checked against every call the backend makes:

- HcclAllReduce(sendBuf, recvBuf, count, dataType, op, comm, stream): `count` is the number of elements of
  sendBuf (and of recvBuf); every rank passes the same count, dataType and op.
- HcclReduceScatter(sendBuf, recvBuf, recvCount, ...): `recvCount` elements land in recvBuf; sendBuf holds
  recvCount x rankSize elements.
- HcclAllGather(sendBuf, recvBuf, sendCount, dataType, comm, stream): `sendCount` elements from every rank;
  recvBuf holds sendCount x rankSize, in rank order.
- HcclBroadcast(buf, count, dataType, root, comm, stream): `count` elements of buf, from rank `root`.
- HcclReduceScatterV(sendBuf, sendCounts, sendDispls, recvBuf, recvCount, dataType, op, comm, stream): the
  uint64 arrays have rankSize entries, in elements of dataType; rank i's result is recvCount elements.
- HcclAllGatherV(sendBuf, sendCount, recvBuf, recvCounts, recvDispls, dataType, comm, stream): likewise, in
  elements.
- HcclSend(sendBuf, count, dataType, destRank, comm, stream) / HcclRecv(recvBuf, count, dataType, srcRank, ...):
  `count` elements.
- All of them are asynchronous on `stream` (the current stream of the rank's device): like ATB, the backend
  only enqueues them, and the caller synchronizes the stream before reading results; with
  ATB_OPS_HCCL_BLOCKING=1 the host waits itself, on an event recorded on that stream after the call.
HcclDataType codes are those of hccl_types.h (written out in tests/vendor_mocks/hccl_mock_helpers.py's HCCL_DTYPE).
The mock moves data for AllGather, AlltoAllV, BatchSendRecv and Send/Recv, and only records the others (their data is
checked through HCCL's C API on CPU, in tests/atb/test_collectives.py's "hccl" cases).
"""

from __future__ import annotations

import pytest
import torch

from tests.support.rank_threads import run_threads
from tests.vendor_mocks.hccl_mock_helpers import HCCL_DTYPE, STREAM_BASE, calls_on, close_all, make_comms, mock

HCCL_REDUCE_OP = {"sum": 0, "prod": 1, "max": 2, "min": 3}  # HcclReduceOp in hccl_types.h
N = 3

pytestmark = pytest.mark.usefixtures("fresh_hccl_mock")


def _inputs(dtype: torch.dtype, numel: int) -> list[torch.Tensor]:
    return [((torch.arange(numel) * 5 + 11 * r) % 23 - 11).to(dtype) for r in range(N)]


def _the_call(comm, fn: str) -> dict:
    (call,) = calls_on(comm.handle, fn)
    return call


def _waited_after(comm, fn: str) -> bool:
    """After the call, an event was recorded on (or the host synchronized) the call's stream: the host waited
    for the work before the call returned."""
    log = mock._hccl_mock_calls()
    at = next(i for i, c in enumerate(log) if c["fn"] == fn and c["comm"] == comm.handle)
    stream = log[at]["stream"]
    return any(c["fn"] in ("aclrtRecordEvent", "aclrtSynchronizeStream") and c["stream"] == stream
               for c in log[at + 1 :])


@pytest.mark.parametrize("op", list(HCCL_REDUCE_OP))
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bfloat16])
def test_all_reduce_count_is_elements(dtype, op):
    comms = make_comms(N)
    try:
        xs = _inputs(dtype, 10)
        outs = [torch.empty_like(x) for x in xs]
        run_threads(N, lambda r: comms[r].allreduce(xs[r], outs[r], op))
        for r, comm in enumerate(comms):
            call = _the_call(comm, "HcclAllReduce")
            assert call["count"] == 10 and call["dataType"] == HCCL_DTYPE[dtype] and call["op"] == HCCL_REDUCE_OP[op]
            assert call["sendBuf"] == xs[r].data_ptr() and call["recvBuf"] == outs[r].data_ptr()
            assert call["stream"] == STREAM_BASE + r
    finally:
        close_all(comms)


def test_reduce_scatter_recv_count_is_elements_per_rank():
    comms = make_comms(N)
    try:
        xs = _inputs(torch.float32, 4 * N)
        outs = [torch.empty(4) for _ in range(N)]
        run_threads(N, lambda r: comms[r].reduce_scatter(xs[r], outs[r]))
        for r, comm in enumerate(comms):
            call = _the_call(comm, "HcclReduceScatter")
            assert call["recvCount"] == 4 and call["sendBuf"] == xs[r].data_ptr()
            assert call["recvBuf"] == outs[r].data_ptr()
    finally:
        close_all(comms)


def test_all_gather_send_count_is_elements_per_rank():
    comms = make_comms(N)
    try:
        xs = _inputs(torch.int16, 6)
        outs = [torch.empty(6 * N, dtype=torch.int16) for _ in range(N)]
        run_threads(N, lambda r: comms[r].allgather(xs[r], outs[r]))
        for r, comm in enumerate(comms):
            call = _the_call(comm, "HcclAllGather")
            assert call["count"] == 6 and call["dataType"] == HCCL_DTYPE[torch.int16]
            assert torch.equal(outs[r], torch.cat(xs))
    finally:
        close_all(comms)


def test_broadcast_count_and_root():
    comms = make_comms(N)
    try:
        xs = _inputs(torch.float16, 7)
        run_threads(N, lambda r: comms[r].broadcast(xs[r], 2))
        for r, comm in enumerate(comms):
            call = _the_call(comm, "HcclBroadcast")
            assert call["count"] == 7 and call["root"] == 2 and call["buf"] == xs[r].data_ptr()
            assert call["dataType"] == HCCL_DTYPE[torch.float16]
    finally:
        close_all(comms)


def test_reduce_scatterv_arrays_are_elements():
    comms = make_comms(N)
    try:
        counts, displs = [2, 0, 5], [9, 0, 2]  # gaps, an empty rank, out of order
        xs = _inputs(torch.float32, 12)
        outs = [torch.full((counts[r],), -1.0) for r in range(N)]
        run_threads(N, lambda r: comms[r].reduce_scatterv(xs[r], counts, displs, outs[r]))
        for r, comm in enumerate(comms):
            call = _the_call(comm, "HcclReduceScatterV")
            assert call["sendCounts"] == counts and call["sendDispls"] == displs and call["recvCount"] == counts[r]
    finally:
        close_all(comms)


def test_all_gatherv_arrays_are_elements():
    comms = make_comms(N)
    try:
        counts, displs = [3, 1, 2], [3, 0, 6]
        xs = [_inputs(torch.int32, 3)[r][: counts[r]] for r in range(N)]
        outs = [torch.full((8,), -7, dtype=torch.int32) for _ in range(N)]
        run_threads(N, lambda r: comms[r].allgatherv(xs[r], counts, displs, outs[r]))
        for r, comm in enumerate(comms):
            call = _the_call(comm, "HcclAllGatherV")
            assert call["sendCount"] == counts[r]
            assert call["recvCounts"] == counts and call["recvDispls"] == displs
    finally:
        close_all(comms)


def test_send_and_recv_counts_are_elements():
    comms = make_comms(2)
    try:
        x = torch.arange(9, dtype=torch.float64)
        got = torch.zeros(9, dtype=torch.float64)
        run_threads(2, lambda r: comms[0].send(x, 1) if r == 0 else comms[1].recv(got, 0))
        send, recv = _the_call(comms[0], "HcclSend"), _the_call(comms[1], "HcclRecv")
        assert send["count"] == 9 and recv["count"] == 9
        assert send["dataType"] == recv["dataType"] == HCCL_DTYPE[torch.float64]
        assert torch.equal(got, x)
    finally:
        close_all(comms)


@pytest.mark.parametrize("blocking", ["0", "1"])
def test_the_host_waits_on_the_stream_only_when_blocking(monkeypatch, blocking):
    monkeypatch.setenv("ATB_OPS_HCCL_BLOCKING", blocking)
    comms = make_comms(N)
    try:
        xs = _inputs(torch.float32, 8)
        outs = [torch.empty_like(x) for x in xs]
        run_threads(N, lambda r: comms[r].allreduce(xs[r], outs[r]))
        for comm in comms:
            assert _waited_after(comm, "HcclAllReduce") == (blocking == "1")
    finally:
        close_all(comms)
