// Backend "hccl" for CPU tensors: the HCCL backend's own logic (csrc/comm/hccl/hccl_communicator.cpp) over HCCL's
// C API as atb_ops implements it on CPU ranks (csrc/emulated/hccl/: $ASCEND_HOME_PATH/lib64/libhccl.so), the
// counterpart of csrc/comm/hccl/npu/hccl_api_impl.cpp. It is part of the emulation's $ATB_HOME_PATH/lib/libatb.so,
// which links libhccl.so as ATB's libatb.so does, and registers the backend when it loads (python -m atb_ops run
// loads it). The NPU runtime has no CPU counterpart: the device calls succeed without
// effect, there are no streams (every call has completed when it returns), and an event is complete as soon as it is
// recorded.
#include <cstring>
#include <type_traits>

#include <hccl/hccl.h>

#include "comm/backend_registry.h"
#include "comm/hccl/hccl_communicator.h"
#include "core/reduce.h"

extern "C" const char* atbOpsHcclCpuLastError();
extern "C" int32_t atbOpsHcclCpuLastStatus();

namespace atb_ops::hccl {

static_assert(kRootInfoBytes == HCCL_ROOT_INFO_BYTES, "HCCL_ROOT_INFO_BYTES changed: update kRootInfoBytes");
static_assert(std::is_same_v<HcclComm, CommHandle>, "HcclComm is not a void*");
static_assert(kSuccess == HCCL_SUCCESS && result::kPara == HCCL_E_PARA && result::kTimeout == HCCL_E_TIMEOUT &&
                  result::kRemote == HCCL_E_REMOTE,
              "HcclResult codes moved");
static_assert(static_cast<int>(ReduceOp::kSum) == HCCL_REDUCE_SUM &&
                  static_cast<int>(ReduceOp::kMin) == HCCL_REDUCE_MIN,
              "HcclReduceOp codes moved");

namespace {

HcclDataType type(int32_t code) {
  return static_cast<HcclDataType>(code);
}

HcclReduceOp op(int32_t code) {
  return static_cast<HcclReduceOp>(code);
}

thread_local int32_t currentDevice = 0;

class CpuHcclApi final : public HcclApi {
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
    return HcclCommInitAll(nDevices, devices, comms);
  }
  int32_t commDestroy(CommHandle comm) override { return HcclCommDestroy(comm); }
  int32_t getRankSize(CommHandle comm, uint32_t* rankSize) override { return HcclGetRankSize(comm, rankSize); }
  int32_t getRankId(CommHandle comm, uint32_t* rank) override { return HcclGetRankId(comm, rank); }
  int32_t getCommAsyncError(CommHandle comm, int32_t* asyncError) override {
    HcclResult async = HCCL_SUCCESS;
    const HcclResult rc = HcclGetCommAsyncError(comm, &async);
    *asyncError = async;
    return rc;
  }
  bool peerLeft(int32_t hcclResult) override {
    return hcclResult != HCCL_SUCCESS &&
           atbOpsHcclCpuLastStatus() == static_cast<int32_t>(Status::ERROR_COMM_PEER_LEFT);
  }
  std::string errorString(int32_t hcclResult) override {
    const std::string detail = atbOpsHcclCpuLastError();
    return std::string(HcclGetErrorString(static_cast<HcclResult>(hcclResult))) +
           (detail.empty() ? "" : " - " + detail);
  }

  int32_t alltoAllV(const void* sendBuf, const uint64_t* sendCounts, const uint64_t* sdispls, int32_t sendType,
                    const void* recvBuf, const uint64_t* recvCounts, const uint64_t* rdispls, int32_t recvType,
                    CommHandle comm, StreamHandle stream) override {
    return HcclAlltoAllV(sendBuf, sendCounts, sdispls, type(sendType), recvBuf, recvCounts, rdispls, type(recvType),
                         comm, stream);
  }
  int32_t allGather(void* sendBuf, void* recvBuf, uint64_t sendCount, int32_t dataType, CommHandle comm,
                    StreamHandle stream) override {
    return HcclAllGather(sendBuf, recvBuf, sendCount, type(dataType), comm, stream);
  }
  int32_t allGatherV(void* sendBuf, uint64_t sendCount, void* recvBuf, const uint64_t* recvCounts,
                     const uint64_t* recvDispls, int32_t dataType, CommHandle comm, StreamHandle stream) override {
    return HcclAllGatherV(sendBuf, sendCount, recvBuf, recvCounts, recvDispls, type(dataType), comm, stream);
  }
  int32_t allReduce(void* sendBuf, void* recvBuf, uint64_t count, int32_t dataType, int32_t reduceOp, CommHandle comm,
                    StreamHandle stream) override {
    return HcclAllReduce(sendBuf, recvBuf, count, type(dataType), op(reduceOp), comm, stream);
  }
  int32_t reduceScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, int32_t dataType, int32_t reduceOp,
                        CommHandle comm, StreamHandle stream) override {
    return HcclReduceScatter(sendBuf, recvBuf, recvCount, type(dataType), op(reduceOp), comm, stream);
  }
  int32_t reduceScatterV(void* sendBuf, const uint64_t* sendCounts, const uint64_t* sendDispls, void* recvBuf,
                         uint64_t recvCount, int32_t dataType, int32_t reduceOp, CommHandle comm,
                         StreamHandle stream) override {
    return HcclReduceScatterV(sendBuf, sendCounts, sendDispls, recvBuf, recvCount, type(dataType), op(reduceOp), comm,
                              stream);
  }
  int32_t broadcast(void* buf, uint64_t count, int32_t dataType, uint32_t root, CommHandle comm,
                    StreamHandle stream) override {
    return HcclBroadcast(buf, count, type(dataType), root, comm, stream);
  }
  int32_t send(void* sendBuf, uint64_t count, int32_t dataType, uint32_t destRank, CommHandle comm,
               StreamHandle stream) override {
    return HcclSend(sendBuf, count, type(dataType), destRank, comm, stream);
  }
  int32_t recv(void* recvBuf, uint64_t count, int32_t dataType, uint32_t srcRank, CommHandle comm,
               StreamHandle stream) override {
    return HcclRecv(recvBuf, count, type(dataType), srcRank, comm, stream);
  }
  int32_t batchSendRecv(SendRecvItem* items, uint32_t itemNum, CommHandle comm, StreamHandle stream) override {
    std::vector<HcclSendRecvItem> list(itemNum);
    for (uint32_t i = 0; i < itemNum; ++i) {
      list[i].sendRecvType = static_cast<HcclSendRecvType>(items[i].type);
      list[i].buf = items[i].buf;
      list[i].count = items[i].count;
      list[i].dataType = type(items[i].dataType);
      list[i].remoteRank = items[i].remoteRank;
    }
    return HcclBatchSendRecv(list.data(), itemNum, comm, stream);
  }
  int32_t barrier(CommHandle comm, StreamHandle stream) override { return HcclBarrier(comm, stream); }

  int32_t getDevice(int32_t* device) override {
    *device = currentDevice;
    return kSuccess;
  }
  int32_t setDevice(int32_t device) override {
    currentDevice = device;
    return kSuccess;
  }
  StreamHandle currentStream(int32_t) override { return nullptr; }
  int32_t createEvent(EventHandle* event) override {
    static char token;
    *event = &token;
    return kSuccess;
  }
  int32_t recordEvent(EventHandle, StreamHandle) override { return kSuccess; }
  int32_t queryEvent(EventHandle, bool* complete) override {
    *complete = true;
    return kSuccess;
  }
  int32_t destroyEvent(EventHandle) override { return kSuccess; }
  std::string runtimeErrorString(int32_t aclError) override {
    return "aclError " + std::to_string(aclError) + " (no NPU runtime on CPU)";
  }
};

const bool registered = [] {
  static const std::shared_ptr<HcclApi> api = std::make_shared<CpuHcclApi>();
  registerBackend("hccl", c10::DeviceType::CPU,
                  [](const CommConfig& c) -> std::shared_ptr<Communicator> { return makeHcclCommunicator(c, api); });
  return true;
}();

}  // namespace
}  // namespace atb_ops::hccl
