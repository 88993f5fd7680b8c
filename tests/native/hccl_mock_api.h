// A recording mock of HcclApi for CPU tests of the HCCL backend's logic (tests/vendor_mocks/test_hccl_mock.py; built
// into atb_ops._testing only).
//
// Every call is logged with its arguments. Communicators live in in-process "worlds": ranks that are
// threads of this process really exchange data through host memory, so a test can check results as
// well as arguments. Faults are injected through MockOptions. It is a test double, not an emulator:
// there are no streams (collectives finish inside the call) and no networking across processes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/hccl/hccl_api.h"

namespace atb_ops::hccl {

struct MockCall {
  explicit MockCall(std::string name = {}) : fn(std::move(name)) {}
  std::string fn;  // the HCCL/ACL function the real API would call, e.g. "HcclAlltoAllV"
  uint64_t comm = 0;
  uint64_t stream = 0;
  int32_t result = kSuccess;
  std::map<std::string, int64_t> ints;                  // rank, nRanks, dataType, count, device, ...
  std::map<std::string, std::vector<uint64_t>> arrays;  // sendCounts, sdispls, recvCounts, rdispls, devices
  std::map<std::string, std::string> strings;           // rankTableFile, rootInfo (raw bytes)
  std::vector<SendRecvItem> items;                      // HcclBatchSendRecv's list
};

struct MockOptions {
  std::map<std::string, int32_t> failWith;  // function name -> result it returns instead of running
  int32_t eventPollsToComplete = 0;         // queries answered "not ready" before "complete"; < 0: never
  int32_t asyncErrorAfterPolls = -1;        // HcclGetCommAsyncError reports asyncErrorCode after this many; < 0: never
  int32_t asyncErrorCode = result::kRemote;
  uint64_t streamBase = 0x5000;         // currentStream(d) is streamBase + d
  int32_t clusterRankSize = 1;          // size of a world made by HcclCommInitClusterInfo
  int32_t zerosBugMinRanks = 0;         // > 0: HcclAlltoAllV writes zeros in worlds this large (CANN 8.3 report)
  int32_t collectiveTimeoutMs = 60000;  // a rank waiting for its peers in a mock collective gives up (HCCL_E_TIMEOUT)
};

class MockHcclApi final : public HcclApi {
 public:
  // The process-wide mock the Python tests drive.
  static std::shared_ptr<MockHcclApi> instance();

  // Clears the log, the options and the worlds. Communicators already handed out stay valid handles
  // (their memory is never freed), so a late destroy is still recorded, not a crash.
  void reset();
  void configure(const MockOptions& options);
  std::vector<MockCall> calls() const;

  // A world of n communicators made outside atb_ops, as a user's own HcclCommInitAll would: handles to adopt.
  std::vector<CommHandle> makeUserComms(int32_t n);
  // How often HcclCommDestroy was called on a handle; -1 for a handle the mock never made.
  int32_t destroyCount(CommHandle comm) const;
  int32_t liveEvents() const;

  int32_t getRootInfo(RootInfo* info) override;
  int32_t commInitRootInfo(uint32_t nRanks, const RootInfo& info, uint32_t rank, CommHandle* comm) override;
  int32_t commInitClusterInfo(const std::string& rankTableFile, uint32_t rank, CommHandle* comm) override;
  int32_t commInitAll(uint32_t nDevices, int32_t* devices, CommHandle* comms) override;
  int32_t commDestroy(CommHandle comm) override;
  int32_t getRankSize(CommHandle comm, uint32_t* rankSize) override;
  int32_t getRankId(CommHandle comm, uint32_t* rank) override;
  int32_t getCommAsyncError(CommHandle comm, int32_t* asyncError) override;
  std::string errorString(int32_t hcclResult) override;

  int32_t alltoAllV(const void* sendBuf, const uint64_t* sendCounts, const uint64_t* sdispls, int32_t sendType,
                    const void* recvBuf, const uint64_t* recvCounts, const uint64_t* rdispls, int32_t recvType,
                    CommHandle comm, StreamHandle stream) override;
  int32_t allGather(void* sendBuf, void* recvBuf, uint64_t sendCount, int32_t dataType, CommHandle comm,
                    StreamHandle stream) override;
  int32_t allGatherV(void* sendBuf, uint64_t sendCount, void* recvBuf, const uint64_t* recvCounts,
                     const uint64_t* recvDispls, int32_t dataType, CommHandle comm, StreamHandle stream) override;
  int32_t allReduce(void* sendBuf, void* recvBuf, uint64_t count, int32_t dataType, int32_t op, CommHandle comm,
                    StreamHandle stream) override;
  int32_t reduceScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, int32_t dataType, int32_t op, CommHandle comm,
                        StreamHandle stream) override;
  int32_t reduceScatterV(void* sendBuf, const uint64_t* sendCounts, const uint64_t* sendDispls, void* recvBuf,
                         uint64_t recvCount, int32_t dataType, int32_t op, CommHandle comm,
                         StreamHandle stream) override;
  int32_t broadcast(void* buf, uint64_t count, int32_t dataType, uint32_t root, CommHandle comm,
                    StreamHandle stream) override;
  int32_t send(void* sendBuf, uint64_t count, int32_t dataType, uint32_t destRank, CommHandle comm,
               StreamHandle stream) override;
  int32_t recv(void* recvBuf, uint64_t count, int32_t dataType, uint32_t srcRank, CommHandle comm,
               StreamHandle stream) override;
  int32_t batchSendRecv(SendRecvItem* items, uint32_t itemNum, CommHandle comm, StreamHandle stream) override;
  int32_t barrier(CommHandle comm, StreamHandle stream) override;

  int32_t getDevice(int32_t* device) override;
  int32_t setDevice(int32_t device) override;
  StreamHandle currentStream(int32_t device) override;
  int32_t createEvent(EventHandle* event) override;
  int32_t recordEvent(EventHandle event, StreamHandle stream) override;
  int32_t queryEvent(EventHandle event, bool* complete) override;
  int32_t destroyEvent(EventHandle event) override;
  std::string runtimeErrorString(int32_t aclError) override;

  struct State;  // worlds, communicators, events; defined in the .cpp

 private:
  MockHcclApi();
  // Point-to-point delivery between ranks of one world (HcclBatchSendRecv, HcclSend, HcclRecv).
  int32_t pointToPoint(SendRecvItem* items, uint32_t itemNum, CommHandle comm, const char* fn);
  std::shared_ptr<State> state_;
};

}  // namespace atb_ops::hccl
