// The real HcclApi: HCCL and ACL through the headers torch_npu ships (the same declarations torch_npu's
// own ProcessGroupHCCL compiles against), devices and streams through torch_npu. Built only with the Ascend
// toolkit; scripts/compile_check_hccl.sh compiles it against the torch_npu wheel's headers in CI.
#include "comm/hccl/npu/real_hccl_api.h"

#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

#include <type_traits>

#include <acl/acl.h>

#include "third_party/hccl/inc/hccl/hccl.h"
#include "third_party/hccl/inc/hccl/hccl_types.h"
#include "torch_npu/csrc/core/npu/NPUFunctions.h"
#include "torch_npu/csrc/core/npu/NPUStream.h"

#include "core/reduce.h"
#include "core/status.h"

namespace atb_ops::hccl {

// The opaque logic layer mirrors these by value; a CANN release that changes one must fail the build here.
static_assert(kRootInfoBytes == HCCL_ROOT_INFO_BYTES, "HCCL_ROOT_INFO_BYTES changed: update kRootInfoBytes");
static_assert(sizeof(HcclRootInfo) == kRootInfoBytes, "HcclRootInfo is no longer a plain byte blob");
static_assert(std::is_same_v<HcclComm, CommHandle>, "HcclComm is not a void*");
static_assert(std::is_same_v<aclrtStream, StreamHandle>, "aclrtStream is not a void*");
static_assert(std::is_same_v<aclrtEvent, EventHandle>, "aclrtEvent is not a void*");
static_assert(kSuccess == HCCL_SUCCESS && kSuccess == ACL_SUCCESS, "success codes moved");
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

// Entry points that older CANN releases lack are looked up at first use rather than linked, so that
// loading atb_ops never fails on them; decltype keeps their signatures checked against hccl.h.
template <typename Fn>
Fn lookup(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_DEFAULT, name));
}

#define ATB_HCCL_OPTIONAL(fn) static const auto fn##Ptr = lookup<decltype(&::fn)>(#fn)

#define ATB_HCCL_REQUIRE(fn, why)                                                                            \
  ATB_CHECK(fn##Ptr != nullptr, ERROR_HCCL_FAIL, #fn " is not exported by the loaded libhccl (", why, "); ", \
            "this CANN release is too old for it")

HcclDataType toHccl(int32_t code) {
  return static_cast<HcclDataType>(code);
}

class RealHcclApi final : public HcclApi {
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
    ATB_HCCL_OPTIONAL(HcclCommInitAll);
    ATB_HCCL_REQUIRE(HcclCommInitAll, "commMode 1 without hcclComm");
    return HcclCommInitAllPtr(nDevices, devices, comms);
  }

  int32_t commDestroy(CommHandle comm) override { return HcclCommDestroy(comm); }

  int32_t getRankSize(CommHandle comm, uint32_t* rankSize) override { return HcclGetRankSize(comm, rankSize); }

  int32_t getRankId(CommHandle comm, uint32_t* rank) override { return HcclGetRankId(comm, rank); }

  int32_t getCommAsyncError(CommHandle comm, int32_t* asyncError) override {
    ATB_HCCL_OPTIONAL(HcclGetCommAsyncError);
    if (HcclGetCommAsyncErrorPtr == nullptr) {
      // Without it a wait can only end by completion or ATB_OPS_TIMEOUT.
      *asyncError = HCCL_SUCCESS;
      return HCCL_SUCCESS;
    }
    HcclResult async = HCCL_SUCCESS;
    const HcclResult rc = HcclGetCommAsyncErrorPtr(comm, &async);
    *asyncError = async;
    return rc;
  }

  std::string errorString(int32_t hcclResult) override {
    ATB_HCCL_OPTIONAL(HcclGetErrorString);
    const char* text =
        HcclGetErrorStringPtr == nullptr ? nullptr : HcclGetErrorStringPtr(static_cast<HcclResult>(hcclResult));
    return text == nullptr ? resultName(hcclResult) : std::string(text);
  }

  int32_t alltoAllV(const void* sendBuf, const uint64_t* sendCounts, const uint64_t* sdispls, int32_t sendType,
                    const void* recvBuf, const uint64_t* recvCounts, const uint64_t* rdispls, int32_t recvType,
                    CommHandle comm, StreamHandle stream) override {
    ATB_HCCL_OPTIONAL(HcclAlltoAllV);
    ATB_HCCL_REQUIRE(HcclAlltoAllV, "alltoallv; try ATB_OPS_HCCL_ALLTOALLV=p2p");
    return HcclAlltoAllVPtr(sendBuf, sendCounts, sdispls, toHccl(sendType), recvBuf, recvCounts, rdispls,
                            toHccl(recvType), comm, stream);
  }

  int32_t allGather(void* sendBuf, void* recvBuf, uint64_t sendCount, int32_t dataType, CommHandle comm,
                    StreamHandle stream) override {
    return HcclAllGather(sendBuf, recvBuf, sendCount, toHccl(dataType), comm, stream);
  }

  int32_t allGatherV(void* sendBuf, uint64_t sendCount, void* recvBuf, const uint64_t* recvCounts,
                     const uint64_t* recvDispls, int32_t dataType, CommHandle comm, StreamHandle stream) override {
    ATB_HCCL_OPTIONAL(HcclAllGatherV);
    ATB_HCCL_REQUIRE(HcclAllGatherV, "AllGatherVOperation");
    return HcclAllGatherVPtr(sendBuf, sendCount, recvBuf, recvCounts, recvDispls, toHccl(dataType), comm, stream);
  }

  int32_t allReduce(void* sendBuf, void* recvBuf, uint64_t count, int32_t dataType, int32_t op, CommHandle comm,
                    StreamHandle stream) override {
    return HcclAllReduce(sendBuf, recvBuf, count, toHccl(dataType), static_cast<HcclReduceOp>(op), comm, stream);
  }

  int32_t reduceScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, int32_t dataType, int32_t op, CommHandle comm,
                        StreamHandle stream) override {
    return HcclReduceScatter(sendBuf, recvBuf, recvCount, toHccl(dataType), static_cast<HcclReduceOp>(op), comm,
                             stream);
  }

  int32_t reduceScatterV(void* sendBuf, const uint64_t* sendCounts, const uint64_t* sendDispls, void* recvBuf,
                         uint64_t recvCount, int32_t dataType, int32_t op, CommHandle comm,
                         StreamHandle stream) override {
    ATB_HCCL_OPTIONAL(HcclReduceScatterV);
    ATB_HCCL_REQUIRE(HcclReduceScatterV, "ReduceScatterVOperation");
    return HcclReduceScatterVPtr(sendBuf, sendCounts, sendDispls, recvBuf, recvCount, toHccl(dataType),
                                 static_cast<HcclReduceOp>(op), comm, stream);
  }

  int32_t broadcast(void* buf, uint64_t count, int32_t dataType, uint32_t root, CommHandle comm,
                    StreamHandle stream) override {
    return HcclBroadcast(buf, count, toHccl(dataType), root, comm, stream);
  }

  int32_t send(void* sendBuf, uint64_t count, int32_t dataType, uint32_t destRank, CommHandle comm,
               StreamHandle stream) override {
    return HcclSend(sendBuf, count, toHccl(dataType), destRank, comm, stream);
  }

  int32_t recv(void* recvBuf, uint64_t count, int32_t dataType, uint32_t srcRank, CommHandle comm,
               StreamHandle stream) override {
    return HcclRecv(recvBuf, count, toHccl(dataType), srcRank, comm, stream);
  }

  int32_t batchSendRecv(SendRecvItem* items, uint32_t itemNum, CommHandle comm, StreamHandle stream) override {
    ATB_HCCL_OPTIONAL(HcclBatchSendRecv);
    ATB_HCCL_REQUIRE(HcclBatchSendRecv, "ATB_OPS_HCCL_ALLTOALLV=p2p");
    std::vector<HcclSendRecvItem> list(itemNum);
    for (uint32_t i = 0; i < itemNum; ++i) {
      list[i].sendRecvType = static_cast<HcclSendRecvType>(items[i].type);
      list[i].buf = items[i].buf;
      list[i].count = items[i].count;
      list[i].dataType = toHccl(items[i].dataType);
      list[i].remoteRank = items[i].remoteRank;
    }
    return HcclBatchSendRecvPtr(list.data(), itemNum, comm, stream);
  }

  int32_t barrier(CommHandle comm, StreamHandle stream) override { return HcclBarrier(comm, stream); }

  // Through torch_npu, whose per-thread device cache must agree with ACL's.
  int32_t getDevice(int32_t* device) override { return c10_npu::GetDevice(device); }

  int32_t setDevice(int32_t device) override { return c10_npu::SetDevice(static_cast<c10::DeviceIndex>(device)); }

  StreamHandle currentStream(int32_t device) override {
    // stream() drains torch_npu's task queue first, so HCCL is ordered after the ATen work queued before it.
    return c10_npu::getCurrentNPUStream(static_cast<c10::DeviceIndex>(device)).stream();
  }

  int32_t createEvent(EventHandle* event) override { return aclrtCreateEvent(event); }

  int32_t recordEvent(EventHandle event, StreamHandle stream) override { return aclrtRecordEvent(event, stream); }

  int32_t queryEvent(EventHandle event, bool* complete) override {
    aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    const aclError rc = aclrtQueryEventStatus(event, &status);
    *complete = status == ACL_EVENT_RECORDED_STATUS_COMPLETE;
    return rc;
  }

  int32_t destroyEvent(EventHandle event) override { return aclrtDestroyEvent(event); }

  std::string runtimeErrorString(int32_t aclError) override {
    const char* text = aclGetRecentErrMsg();
    return text == nullptr || *text == '\0' ? "aclError " + std::to_string(aclError) : std::string(text);
  }
};

}  // namespace

std::shared_ptr<HcclApi> realHcclApi() {
  static std::shared_ptr<HcclApi> api = std::make_shared<RealHcclApi>();
  return api;
}

}  // namespace atb_ops::hccl
