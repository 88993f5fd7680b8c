// HCCL's collectives and point-to-point calls on CPU ranks (see hccl_lifecycle.cpp for what this library is):
// each checks its handle and arguments with HCCL's codes, then runs on the communicator's atb_ops transport.
#include <ATen/ops/empty_like.h>

#include <string>
#include <vector>

#include <hccl/hccl.h>

#include "core/layout.h"
#include "emulated/hccl/c_api_support.h"

using namespace atb_ops::hccl_cpu;  // NOLINT(google-build-using-namespace): the helpers every entry point uses

extern "C" {

HcclResult HcclAllReduce(void* sendBuf, void* recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                         HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  HCCL_CPU_CHECK_OP(op);
  return guarded([&] {
    at::Tensor out = typed(recvBuf, count, dataType, "recvBuf");
    live->comm->allreduce(typed(sendBuf, count, dataType, "sendBuf"), out, reduceOpOf(op));
  });
}

HcclResult HcclBroadcast(void* buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                         aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  if (root >= live->size) return fail(HCCL_E_PARA, "HcclBroadcast: root " + std::to_string(root));
  return guarded([&] {
    at::Tensor t = payload(buf, count, dataType, "buf");
    live->comm->broadcast(t, static_cast<int32_t>(root));
  });
}

HcclResult HcclReduceScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, HcclDataType dataType, HcclReduceOp op,
                             HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  HCCL_CPU_CHECK_OP(op);
  return guarded([&] {
    const uint64_t n = live->size;
    at::Tensor out = typed(recvBuf, recvCount, dataType, "recvBuf");
    live->comm->reduceScatter(typed(sendBuf, recvCount * n, dataType, "sendBuf"), out, reduceOpOf(op));
  });
}

HcclResult HcclReduceScatterV(void* sendBuf, const void* sendCounts, const void* sendDispls, void* recvBuf,
                              uint64_t recvCount, HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                              aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  HCCL_CPU_CHECK_OP(op);
  if (sendCounts == nullptr || sendDispls == nullptr) return fail(HCCL_E_PTR, "HcclReduceScatterV: null counts");
  return guarded([&] {
    const CpuComm& c = *live;
    atb_ops::VLayout layout{countsOf(sendCounts, c.size), countsOf(sendDispls, c.size)};
    clearEmptyDispls(layout.counts, layout.displs);
    const int64_t sendNumel = extent(layout.counts, layout.displs);
    atb_ops::validateVLayout(layout, c.size, sendNumel, false, "sendCounts", "sendDispls");
    ATB_CHECK(layout.counts[c.rank] == static_cast<int64_t>(recvCount), ERROR_INVALID_PARAM, "recvCount ", recvCount,
              " differs from sendCounts[", c.rank, "]=", layout.counts[c.rank]);
    at::Tensor out = typed(recvBuf, recvCount, dataType, "recvBuf");
    c.comm->reduceScatterV(typed(sendBuf, static_cast<uint64_t>(sendNumel), dataType, "sendBuf"), layout, out,
                           reduceOpOf(op));
  });
}

HcclResult HcclScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, HcclDataType dataType, uint32_t root,
                       HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  if (root >= live->size) return fail(HCCL_E_PARA, "HcclScatter: root " + std::to_string(root));
  return guarded([&] {
    const CpuComm& c = *live;
    const int64_t chunk = static_cast<int64_t>(recvCount) * unitOf(dataType);
    const int32_t n = static_cast<int32_t>(c.size);
    atb_ops::AllToAllVLayout l{std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0),
                               std::vector<int64_t>(n, 0)};
    l.recvCounts[root] = chunk;
    if (c.rank == root) {
      for (int32_t j = 0; j < n; ++j) {
        l.sendCounts[j] = chunk;
        l.sdispls[j] = j * chunk;
      }
    }
    at::Tensor send = c.rank == root ? payload(sendBuf, recvCount * c.size, dataType, "sendBuf")
                                     : payload(nullptr, 0, dataType, "sendBuf");
    at::Tensor out = payload(recvBuf, recvCount, dataType, "recvBuf");
    c.comm->alltoallv(send, l, out);
  });
}

HcclResult HcclAllGather(void* sendBuf, void* recvBuf, uint64_t sendCount, HcclDataType dataType, HcclComm comm,
                         aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  return guarded([&] {
    at::Tensor out = payload(recvBuf, sendCount * live->size, dataType, "recvBuf");
    live->comm->allgather(payload(sendBuf, sendCount, dataType, "sendBuf"), out);
  });
}

HcclResult HcclAllGatherV(void* sendBuf, uint64_t sendCount, void* recvBuf, const void* recvCounts,
                          const void* recvDispls, HcclDataType dataType, HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  if (recvCounts == nullptr || recvDispls == nullptr) return fail(HCCL_E_PTR, "HcclAllGatherV: null counts");
  return guarded([&] {
    const CpuComm& c = *live;
    const int64_t es = unitOf(dataType);
    atb_ops::VLayout layout{countsOf(recvCounts, c.size), countsOf(recvDispls, c.size)};
    clearEmptyDispls(layout.counts, layout.displs);
    const int64_t recvNumel = extent(layout.counts, layout.displs);
    atb_ops::validateVLayout(layout, c.size, recvNumel, true, "recvCounts", "recvDispls");
    ATB_CHECK(layout.counts[c.rank] == static_cast<int64_t>(sendCount), ERROR_INVALID_PARAM, "sendCount ", sendCount,
              " differs from recvCounts[", c.rank, "]=", layout.counts[c.rank]);
    for (size_t i = 0; i < layout.counts.size(); ++i) {
      layout.counts[i] *= es;
      layout.displs[i] *= es;
    }
    at::Tensor out = payload(recvBuf, static_cast<uint64_t>(recvNumel), dataType, "recvBuf");
    c.comm->allgatherv(payload(sendBuf, sendCount, dataType, "sendBuf"), layout, out);
  });
}

HcclResult HcclAlltoAllV(const void* sendBuf, const void* sendCounts, const void* sdispls, HcclDataType sendType,
                         const void* recvBuf, const void* recvCounts, const void* rdispls, HcclDataType recvType,
                         HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(sendType);
  if (sendType != recvType) return fail(HCCL_E_PARA, "HcclAlltoAllV: sendType and recvType differ");
  if (sendCounts == nullptr || sdispls == nullptr || recvCounts == nullptr || rdispls == nullptr) {
    return fail(HCCL_E_PTR, "HcclAlltoAllV: null counts");
  }
  if (sendBuf != nullptr && sendBuf == recvBuf) {  // HCCL's HcomCheckAlltoAllVExternalMem
    return fail(HCCL_E_PARA, "HcclAlltoAllV: sendBuf and recvBuf are the same buffer; HCCL has no in-place all-to-all");
  }
  return guarded([&] {
    const CpuComm& c = *live;
    atb_ops::AllToAllVLayout l{countsOf(sendCounts, c.size), countsOf(sdispls, c.size), countsOf(recvCounts, c.size),
                               countsOf(rdispls, c.size)};
    clearEmptyDispls(l.sendCounts, l.sdispls);
    clearEmptyDispls(l.recvCounts, l.rdispls);
    const int64_t sendNumel = extent(l.sendCounts, l.sdispls);
    const int64_t recvNumel = extent(l.recvCounts, l.rdispls);
    atb_ops::validateLayout(l, c.size, sendNumel, recvNumel);
    const int64_t es = unitOf(sendType);
    for (auto* v : {&l.sendCounts, &l.sdispls, &l.recvCounts, &l.rdispls}) {
      for (auto& x : *v) x *= es;
    }
    at::Tensor out = payload(recvBuf, static_cast<uint64_t>(recvNumel), sendType, "recvBuf");
    c.comm->alltoallv(payload(sendBuf, static_cast<uint64_t>(sendNumel), sendType, "sendBuf"), l, out);
  });
}

// AlltoAllV with every rank's counts in one matrix: row i is what rank i sends to each rank, packed in rank order in
// its send buffer; this rank receives column `rank`, packed in source order.
HcclResult HcclAlltoAllVC(const void* sendBuf, const void* sendCountMatrix, HcclDataType sendType, const void* recvBuf,
                          HcclDataType recvType, HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(sendType);
  if (sendType != recvType) return fail(HCCL_E_PARA, "HcclAlltoAllVC: sendType and recvType differ");
  if (sendCountMatrix == nullptr) return fail(HCCL_E_PTR, "HcclAlltoAllVC: sendCountMatrix is null");
  return guarded([&] {
    const CpuComm& c = *live;
    const uint32_t n = c.size;
    const std::vector<int64_t> matrix = countsOf(sendCountMatrix, n * n);
    atb_ops::AllToAllVLayout l;
    int64_t sent = 0;
    int64_t received = 0;
    for (uint32_t j = 0; j < n; ++j) {
      l.sendCounts.push_back(matrix[c.rank * n + j]);
      l.sdispls.push_back(sent);
      sent += l.sendCounts.back();
      l.recvCounts.push_back(matrix[j * n + c.rank]);
      l.rdispls.push_back(received);
      received += l.recvCounts.back();
    }
    atb_ops::validateLayout(l, static_cast<int32_t>(n), sent, received);
    const int64_t es = unitOf(sendType);
    for (auto* v : {&l.sendCounts, &l.sdispls, &l.recvCounts, &l.rdispls}) {
      for (auto& x : *v) x *= es;
    }
    at::Tensor out = payload(recvBuf, static_cast<uint64_t>(received), sendType, "recvBuf");
    c.comm->alltoallv(payload(sendBuf, static_cast<uint64_t>(sent), sendType, "sendBuf"), l, out);
  });
}

HcclResult HcclAlltoAll(const void* sendBuf, uint64_t sendCount, HcclDataType sendType, const void* recvBuf,
                        uint64_t recvCount, HcclDataType recvType, HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(sendType);
  if (sendType != recvType || sendCount != recvCount) {
    return fail(HCCL_E_PARA, "HcclAlltoAll: send and receive counts or types differ");
  }
  return guarded([&] {
    const CpuComm& c = *live;
    const int64_t chunk = static_cast<int64_t>(sendCount) * unitOf(sendType);
    at::Tensor out = payload(recvBuf, recvCount * c.size, recvType, "recvBuf");
    c.comm->alltoallv(payload(sendBuf, sendCount * c.size, sendType, "sendBuf"),
                      atb_ops::equalSplitLayout(c.size, chunk), out);
  });
}

HcclResult HcclReduce(void* sendBuf, void* recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                      uint32_t root, HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  HCCL_CPU_CHECK_OP(op);
  if (root >= live->size) return fail(HCCL_E_PARA, "HcclReduce: root " + std::to_string(root));
  if (live->rank == root && recvBuf == nullptr && count > 0) {  // checked before any rank moves data
    return fail(HCCL_E_PTR, "HcclReduce: recvBuf is null on the root");
  }
  return guarded([&] {
    const CpuComm& c = *live;
    const at::Tensor send = typed(sendBuf, count, dataType, "sendBuf");
    at::Tensor result = at::empty_like(send);
    c.comm->allreduce(send, result, reduceOpOf(op), static_cast<int32_t>(root));
    if (c.rank == root) typed(recvBuf, count, dataType, "recvBuf").copy_(result);
  });
}

HcclResult HcclSend(void* sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                    aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  if (destRank >= live->size) return fail(HCCL_E_PARA, "HcclSend: destRank " + std::to_string(destRank));
  return guarded(
      [&] { live->comm->send(payload(sendBuf, count, dataType, "sendBuf"), static_cast<int32_t>(destRank)); });
}

HcclResult HcclRecv(void* recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                    aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  if (srcRank >= live->size) return fail(HCCL_E_PARA, "HcclRecv: srcRank " + std::to_string(srcRank));
  return guarded([&] {
    at::Tensor t = payload(recvBuf, count, dataType, "recvBuf");
    live->comm->recv(t, static_cast<int32_t>(srcRank));
  });
}

HcclResult HcclBatchSendRecv(HcclSendRecvItem* sendRecvInfo, uint32_t itemNum, HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  if (sendRecvInfo == nullptr && itemNum > 0) return fail(HCCL_E_PTR, "HcclBatchSendRecv: null item list");
  for (uint32_t i = 0; i < itemNum; ++i) {
    const HcclSendRecvItem& it = sendRecvInfo[i];
    HCCL_CPU_CHECK_TYPE(it.dataType);
    if (it.sendRecvType != HCCL_SEND && it.sendRecvType != HCCL_RECV) {
      return fail(HCCL_E_PARA, "HcclBatchSendRecv: item " + std::to_string(i) + " has sendRecvType " +
                                   std::to_string(static_cast<int>(it.sendRecvType)) + ", neither HCCL_SEND (0) nor " +
                                   "HCCL_RECV (1)");
    }
    if (it.remoteRank >= live->size || it.remoteRank == live->rank) {
      return fail(HCCL_E_PARA,
                  "HcclBatchSendRecv: item " + std::to_string(i) + " names rank " + std::to_string(it.remoteRank));
    }
    if (it.buf == nullptr && it.count > 0) {
      return fail(HCCL_E_PTR, "HcclBatchSendRecv: item " + std::to_string(i) + "'s buf is null");
    }
  }
  return guarded([&] {
    // Made in here: viewing a bad count throws, and no exception may leave HCCL's C API.
    std::vector<atb_ops::P2pOp> ops;
    for (uint32_t i = 0; i < itemNum; ++i) {
      const HcclSendRecvItem& it = sendRecvInfo[i];
      ops.push_back(atb_ops::P2pOp{it.sendRecvType == HCCL_SEND, payload(it.buf, it.count, it.dataType, "buf"),
                                   static_cast<int32_t>(it.remoteRank)});
    }
    live->comm->sendRecv(ops);
  });
}

HcclResult HcclBarrier(HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  return guarded([&] { live->comm->barrier(); });
}

}  // extern "C"
