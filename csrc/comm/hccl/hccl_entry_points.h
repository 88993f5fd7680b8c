// HcclApi's HCCL half, written once for both builds that call HCCL's C API: the NPU build (npu/hccl_api_impl.cpp,
// against the hccl.h torch_npu ships) and the CPU build (csrc/emulated/atb/hccl_backend/, against atb_ops' own
// include/hccl/hccl.h, served by csrc/emulated/hccl/). The two differ only in the runtime half (devices, streams,
// events, error texts), which each derives, and in how an entry point that older CANN releases lack is reached.
//
// The including file first includes the hccl.h it builds against and defines:
//   ATB_HCCL_ENTRY(fn, why)      a callable of decltype(&::fn) for an entry point an older library may lack; it raises
//                                naming `fn` and `why` when the loaded library has none
//   ATB_HCCL_MAYBE_ENTRY(fn)     the same, or nullptr when the library has none
// The NPU build resolves them when first used (dlsym), so that loading atb_ops never fails on a missing symbol; the
// CPU build links them.
//
// Everything here is in an unnamed namespace on purpose: the two builds compile it against two different hccl.h
// copies into two libraries that may be loaded together, and each must keep its own vtable.
#pragma once

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "comm/hccl/hccl_api.h"
#include "core/reduce.h"

#if !defined(ATB_HCCL_ENTRY) || !defined(ATB_HCCL_MAYBE_ENTRY)
#error "include hccl.h and define ATB_HCCL_ENTRY and ATB_HCCL_MAYBE_ENTRY before hccl_entry_points.h"
#endif

namespace atb_ops::hccl {

// hccl_api.h mirrors these by value so that the logic compiles without vendor headers; a CANN release (or an edit of
// include/hccl) that changes one must fail the build here.
static_assert(kRootInfoBytes == HCCL_ROOT_INFO_BYTES, "HCCL_ROOT_INFO_BYTES changed: update kRootInfoBytes");
static_assert(sizeof(HcclRootInfo) == kRootInfoBytes, "HcclRootInfo is no longer a plain byte blob");
static_assert(std::is_same_v<HcclComm, CommHandle>, "HcclComm is not a void*");
static_assert(kSuccess == HCCL_SUCCESS, "HCCL_SUCCESS moved");
static_assert(result::kPara == HCCL_E_PARA && result::kNotSupport == HCCL_E_NOT_SUPPORT &&
                  result::kTimeout == HCCL_E_TIMEOUT && result::kRemote == HCCL_E_REMOTE,
              "HcclResult codes moved");
static_assert(dtype::kInt8 == HCCL_DATA_TYPE_INT8 && dtype::kInt16 == HCCL_DATA_TYPE_INT16 &&
                  dtype::kInt32 == HCCL_DATA_TYPE_INT32 && dtype::kFp16 == HCCL_DATA_TYPE_FP16 &&
                  dtype::kFp32 == HCCL_DATA_TYPE_FP32 && dtype::kInt64 == HCCL_DATA_TYPE_INT64 &&
                  dtype::kUint64 == HCCL_DATA_TYPE_UINT64 && dtype::kUint8 == HCCL_DATA_TYPE_UINT8 &&
                  dtype::kUint16 == HCCL_DATA_TYPE_UINT16 && dtype::kUint32 == HCCL_DATA_TYPE_UINT32 &&
                  dtype::kFp64 == HCCL_DATA_TYPE_FP64 && dtype::kBfp16 == HCCL_DATA_TYPE_BFP16,
              "HcclDataType codes moved");
static_assert(HCCL_REDUCE_SUM == static_cast<int>(ReduceOp::kSum) &&
                  HCCL_REDUCE_PROD == static_cast<int>(ReduceOp::kProd) &&
                  HCCL_REDUCE_MAX == static_cast<int>(ReduceOp::kMax) &&
                  HCCL_REDUCE_MIN == static_cast<int>(ReduceOp::kMin),
              "HcclReduceOp codes moved");
static_assert(static_cast<int32_t>(SendRecvType::kSend) == HCCL_SEND &&
                  static_cast<int32_t>(SendRecvType::kRecv) == HCCL_RECV,
              "HcclSendRecvType codes moved");

namespace {

inline HcclDataType hcclType(int32_t code) {
  return static_cast<HcclDataType>(code);
}

inline HcclReduceOp hcclOp(int32_t code) {
  return static_cast<HcclReduceOp>(code);
}

// Communicators and collectives through HCCL's C API; the runtime half is the derived class's.
class HcclEntryPoints : public HcclApi {
 public:
  int32_t getRootInfo(RootInfo* info) override {
    HcclRootInfo root{};
    const HcclResult rc = HcclGetRootInfo(&root);
    std::memcpy(info->data(), root.internal, kRootInfoBytes);
    return rc;
  }

  int32_t commInitRootInfo(uint32_t nRanks, const RootInfo& info, uint32_t rank, CommHandle* comm) override {
    HcclRootInfo root{};
    std::memcpy(root.internal, info.data(), kRootInfoBytes);
    return HcclCommInitRootInfo(nRanks, &root, rank, comm);
  }

  int32_t commInitClusterInfo(const std::string& rankTableFile, uint32_t rank, CommHandle* comm) override {
    return HcclCommInitClusterInfo(rankTableFile.c_str(), rank, comm);
  }

  int32_t commInitAll(uint32_t nDevices, int32_t* devices, CommHandle* comms) override {
    return ATB_HCCL_ENTRY(HcclCommInitAll, "commMode 1 without hcclComm")(nDevices, devices, comms);
  }

  int32_t commDestroy(CommHandle comm) override { return HcclCommDestroy(comm); }

  int32_t getRankSize(CommHandle comm, uint32_t* rankSize) override { return HcclGetRankSize(comm, rankSize); }

  int32_t getRankId(CommHandle comm, uint32_t* rank) override { return HcclGetRankId(comm, rank); }

  int32_t getCommAsyncError(CommHandle comm, int32_t* asyncError) override {
    const auto query = ATB_HCCL_MAYBE_ENTRY(HcclGetCommAsyncError);
    HcclResult async = HCCL_SUCCESS;
    // Without it a wait can only end by completion or ATB_OPS_TIMEOUT.
    const HcclResult rc = query == nullptr ? HCCL_SUCCESS : query(comm, &async);
    *asyncError = async;
    return rc;
  }

  int32_t alltoAllV(const void* sendBuf, const uint64_t* sendCounts, const uint64_t* sdispls, int32_t sendType,
                    const void* recvBuf, const uint64_t* recvCounts, const uint64_t* rdispls, int32_t recvType,
                    CommHandle comm, StreamHandle stream) override {
    return ATB_HCCL_ENTRY(HcclAlltoAllV, "alltoallv; try ATB_OPS_HCCL_ALLTOALLV=p2p")(
        sendBuf, sendCounts, sdispls, hcclType(sendType), recvBuf, recvCounts, rdispls, hcclType(recvType), comm,
        stream);
  }

  int32_t allGather(void* sendBuf, void* recvBuf, uint64_t sendCount, int32_t dataType, CommHandle comm,
                    StreamHandle stream) override {
    return HcclAllGather(sendBuf, recvBuf, sendCount, hcclType(dataType), comm, stream);
  }

  int32_t allGatherV(void* sendBuf, uint64_t sendCount, void* recvBuf, const uint64_t* recvCounts,
                     const uint64_t* recvDispls, int32_t dataType, CommHandle comm, StreamHandle stream) override {
    return ATB_HCCL_ENTRY(HcclAllGatherV, "AllGatherVOperation")(sendBuf, sendCount, recvBuf, recvCounts, recvDispls,
                                                                 hcclType(dataType), comm, stream);
  }

  int32_t allReduce(void* sendBuf, void* recvBuf, uint64_t count, int32_t dataType, int32_t op, CommHandle comm,
                    StreamHandle stream) override {
    return HcclAllReduce(sendBuf, recvBuf, count, hcclType(dataType), hcclOp(op), comm, stream);
  }

  int32_t reduceScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, int32_t dataType, int32_t op, CommHandle comm,
                        StreamHandle stream) override {
    return HcclReduceScatter(sendBuf, recvBuf, recvCount, hcclType(dataType), hcclOp(op), comm, stream);
  }

  int32_t reduceScatterV(void* sendBuf, const uint64_t* sendCounts, const uint64_t* sendDispls, void* recvBuf,
                         uint64_t recvCount, int32_t dataType, int32_t op, CommHandle comm,
                         StreamHandle stream) override {
    return ATB_HCCL_ENTRY(HcclReduceScatterV, "ReduceScatterVOperation")(
        sendBuf, sendCounts, sendDispls, recvBuf, recvCount, hcclType(dataType), hcclOp(op), comm, stream);
  }

  int32_t broadcast(void* buf, uint64_t count, int32_t dataType, uint32_t root, CommHandle comm,
                    StreamHandle stream) override {
    return HcclBroadcast(buf, count, hcclType(dataType), root, comm, stream);
  }

  int32_t send(void* sendBuf, uint64_t count, int32_t dataType, uint32_t destRank, CommHandle comm,
               StreamHandle stream) override {
    return HcclSend(sendBuf, count, hcclType(dataType), destRank, comm, stream);
  }

  int32_t recv(void* recvBuf, uint64_t count, int32_t dataType, uint32_t srcRank, CommHandle comm,
               StreamHandle stream) override {
    return HcclRecv(recvBuf, count, hcclType(dataType), srcRank, comm, stream);
  }

  int32_t batchSendRecv(SendRecvItem* items, uint32_t itemNum, CommHandle comm, StreamHandle stream) override {
    const auto batch = ATB_HCCL_ENTRY(HcclBatchSendRecv, "ATB_OPS_HCCL_ALLTOALLV=p2p");
    std::vector<HcclSendRecvItem> list(itemNum);
    for (uint32_t i = 0; i < itemNum; ++i) {
      list[i].sendRecvType = static_cast<HcclSendRecvType>(items[i].type);
      list[i].buf = items[i].buf;
      list[i].count = items[i].count;
      list[i].dataType = hcclType(items[i].dataType);
      list[i].remoteRank = items[i].remoteRank;
    }
    return batch(list.data(), itemNum, comm, stream);
  }

  int32_t barrier(CommHandle comm, StreamHandle stream) override { return HcclBarrier(comm, stream); }
};

}  // namespace
}  // namespace atb_ops::hccl
