// HcclApi: the one thin, virtual door through which the HCCL backend reaches HCCL, ACL and torch_npu.
//
// The backend logic (count arrays, path choice, communicator ownership, root-info exchange) is written
// against this interface with opaque types only, so it compiles without the Ascend headers, is always
// built into libatb_ops, unit-tested with a recording mock (tests/native/hccl_mock_api.h), and run with
// real data on CPU ranks through HCCL's own C API as atb_ops implements it (csrc/emulated/hccl/), by the
// implementation in csrc/emulated/atb/hccl_backend/ (part of the emulation's libatb.so). The NPU
// implementation (npu/hccl_api_impl.cpp) is compiled only when the Ascend toolkit is found. Both share their HCCL
// calls (hccl_entry_points.h, which static_asserts every constant below against the hccl_types.h it is built
// against) and differ in the runtime half.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace atb_ops::hccl {

using CommHandle = void*;    // HcclComm
using StreamHandle = void*;  // aclrtStream
using EventHandle = void*;   // aclrtEvent

// HCCL_SUCCESS and ACL_SUCCESS.
constexpr int32_t kSuccess = 0;

// HCCL_ROOT_INFO_BYTES in hccl_types.h (CANN 8.x); checked against the header in the real TU.
constexpr uint32_t kRootInfoBytes = 4108;
using RootInfo = std::array<char, kRootInfoBytes>;

// HcclDataType codes (hccl_types.h), as plain ints so this header needs no vendor include.
namespace dtype {
constexpr int32_t kInt8 = 0;
constexpr int32_t kInt16 = 1;
constexpr int32_t kInt32 = 2;
constexpr int32_t kFp16 = 3;
constexpr int32_t kFp32 = 4;
constexpr int32_t kInt64 = 5;
constexpr int32_t kUint64 = 6;
constexpr int32_t kUint8 = 7;
constexpr int32_t kUint16 = 8;
constexpr int32_t kUint32 = 9;
constexpr int32_t kFp64 = 10;
constexpr int32_t kBfp16 = 11;
}  // namespace dtype

// Bytes per element of an HcclDataType code; 0 for codes this backend never produces.
int64_t dataTypeSize(int32_t code);

// HcclResult codes (hccl_types.h) that the logic reacts to by name.
namespace result {
constexpr int32_t kPara = 1;
constexpr int32_t kNotSupport = 5;
constexpr int32_t kTimeout = 9;
constexpr int32_t kRemote = 21;
}  // namespace result

// "HCCL_E_PARA" for 1, ...; "HCCL_RESULT_<n>" for codes the table does not know.
std::string resultName(int32_t code);

// HcclSendRecvType.
enum class SendRecvType : int32_t { kSend = 0, kRecv = 1 };

// One entry of HcclBatchSendRecv's list (HcclSendRecvItem, field for field).
struct SendRecvItem {
  SendRecvType type = SendRecvType::kSend;
  void* buf = nullptr;
  uint64_t count = 0;  // elements
  int32_t dataType = dtype::kInt8;
  uint32_t remoteRank = 0;
};

// Return values are HcclResult (HCCL entry points) or aclError (runtime entry points); 0 is success.
class HcclApi {
 public:
  virtual ~HcclApi() = default;

  // --- communicators (HCCL) ---
  virtual int32_t getRootInfo(RootInfo* info) = 0;
  virtual int32_t commInitRootInfo(uint32_t nRanks, const RootInfo& info, uint32_t rank, CommHandle* comm) = 0;
  virtual int32_t commInitClusterInfo(const std::string& rankTableFile, uint32_t rank, CommHandle* comm) = 0;
  // One process, nDevices devices: comms[i] is the communicator of devices[i] (rank i).
  virtual int32_t commInitAll(uint32_t nDevices, int32_t* devices, CommHandle* comms) = 0;
  virtual int32_t commDestroy(CommHandle comm) = 0;
  virtual int32_t getRankSize(CommHandle comm, uint32_t* rankSize) = 0;
  virtual int32_t getRankId(CommHandle comm, uint32_t* rank) = 0;
  // A fault found asynchronously (a dead peer, a failed task); kSuccess in *asyncError when none.
  virtual int32_t getCommAsyncError(CommHandle comm, int32_t* asyncError) = 0;
  // HcclGetErrorString where the library has it, else the result's name.
  virtual std::string errorString(int32_t hcclResult) = 0;
  // Whether the call that just failed found that a peer released the communicator (its last user went): only
  // HCCL on CPU can tell; on an NPU it is a failure like any other.
  virtual bool peerLeft(int32_t hcclResult) {
    (void)hcclResult;
    return false;
  }

  // --- collectives (HCCL), enqueued on `stream`; counts and displacements in elements ---
  virtual int32_t alltoAllV(const void* sendBuf, const uint64_t* sendCounts, const uint64_t* sdispls, int32_t sendType,
                            const void* recvBuf, const uint64_t* recvCounts, const uint64_t* rdispls, int32_t recvType,
                            CommHandle comm, StreamHandle stream) = 0;
  virtual int32_t allGather(void* sendBuf, void* recvBuf, uint64_t sendCount, int32_t dataType, CommHandle comm,
                            StreamHandle stream) = 0;
  virtual int32_t allGatherV(void* sendBuf, uint64_t sendCount, void* recvBuf, const uint64_t* recvCounts,
                             const uint64_t* recvDispls, int32_t dataType, CommHandle comm, StreamHandle stream) = 0;
  // `op` is an HcclReduceOp (sum 0, prod 1, max 2, min 3: atb_ops::ReduceOp's order).
  virtual int32_t allReduce(void* sendBuf, void* recvBuf, uint64_t count, int32_t dataType, int32_t op, CommHandle comm,
                            StreamHandle stream) = 0;
  virtual int32_t reduceScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, int32_t dataType, int32_t op,
                                CommHandle comm, StreamHandle stream) = 0;
  virtual int32_t reduceScatterV(void* sendBuf, const uint64_t* sendCounts, const uint64_t* sendDispls, void* recvBuf,
                                 uint64_t recvCount, int32_t dataType, int32_t op, CommHandle comm,
                                 StreamHandle stream) = 0;
  virtual int32_t broadcast(void* buf, uint64_t count, int32_t dataType, uint32_t root, CommHandle comm,
                            StreamHandle stream) = 0;
  virtual int32_t send(void* sendBuf, uint64_t count, int32_t dataType, uint32_t destRank, CommHandle comm,
                       StreamHandle stream) = 0;
  virtual int32_t recv(void* recvBuf, uint64_t count, int32_t dataType, uint32_t srcRank, CommHandle comm,
                       StreamHandle stream) = 0;
  virtual int32_t batchSendRecv(SendRecvItem* items, uint32_t itemNum, CommHandle comm, StreamHandle stream) = 0;
  virtual int32_t barrier(CommHandle comm, StreamHandle stream) = 0;

  // --- runtime (ACL through torch_npu, so torch_npu's view of the current device stays right) ---
  virtual int32_t getDevice(int32_t* device) = 0;
  virtual int32_t setDevice(int32_t device) = 0;
  // torch_npu's current stream on `device`, with torch_npu's pending task queue flushed into it, so
  // a collective is ordered after the ATen work that produced its input.
  virtual StreamHandle currentStream(int32_t device) = 0;
  virtual int32_t createEvent(EventHandle* event) = 0;
  virtual int32_t recordEvent(EventHandle event, StreamHandle stream) = 0;
  virtual int32_t queryEvent(EventHandle event, bool* complete) = 0;
  virtual int32_t destroyEvent(EventHandle event) = 0;
  // aclGetRecentErrMsg (or the code) for an aclError.
  virtual std::string runtimeErrorString(int32_t aclError) = 0;
};

}  // namespace atb_ops::hccl
