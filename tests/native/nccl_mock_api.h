// A recording NcclApi for CPU tests: every call is logged with its arguments, and results, asynchronous
// errors, InProgress phases and stream states are scripted. Exposed to Python by nccl_mock_bindings.cpp
// (atb_ops._testing, tests only).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "comm/nccl/nccl_api.h"

namespace atb_ops::nccl {

struct MockCall {
  std::string op;                              // "send", "recv", "groupStart", ...
  std::map<std::string, int64_t> ints;         // buf, count, peer, comm, stream, rank, nranks, ...
  std::map<std::string, std::string> strings;  // dtype, id (hex)
};

class MockNcclApi final : public NcclApi {
 public:
  // Scripting. `nth` counts calls of `op` from 0; the matching call returns `result` instead of Success.
  void failOn(const std::string& op, int64_t nth, NcclResult result);
  // commInitRank and groupEnd/allGather return InProgress; commGetAsyncError then answers InProgress
  // `polls` times (-1: forever) before the async error state.
  void setInProgress(int64_t polls);
  // What commGetAsyncError reports once not InProgress.
  void setAsyncError(NcclResult result);
  // streamQuery answers Pending `polls` times (-1: forever), then Complete, or Failed with `error` if set.
  void setStreamPending(int64_t polls, const std::string& error = "");
  // What commUserRank / commCount report for any handle.
  void setCommShape(int rank, int size);
  // The id getUniqueId returns; random bytes when never set.
  void setUniqueId(const UniqueId& id);
  // Emulates NCCL's join across processes: commInitRank appends this rank to <dir>/<id prefix> and the
  // communicator stays InProgress until `nranks` ranks have joined, as a real non-blocking init does.
  void setJoinDir(const std::string& dir);

  std::vector<MockCall> calls() const;
  // How many times each op was called (commGetAsyncError polls are counted here, not logged).
  std::map<std::string, int64_t> counts() const;
  void clearCalls();

  NcclResult groupStart() override;
  NcclResult groupEnd() override;
  NcclResult send(const void* buf, size_t count, NcclDataType type, int peer, CommHandle comm,
                  StreamHandle stream) override;
  NcclResult recv(void* buf, size_t count, NcclDataType type, int peer, CommHandle comm, StreamHandle stream) override;
  NcclResult allGather(const void* sendBuf, void* recvBuf, size_t sendCount, NcclDataType type, CommHandle comm,
                       StreamHandle stream) override;
  NcclResult allReduce(const void* sendBuf, void* recvBuf, size_t count, NcclDataType type, NcclRedOp op,
                       CommHandle comm, StreamHandle stream) override;
  NcclResult reduceScatter(const void* sendBuf, void* recvBuf, size_t recvCount, NcclDataType type, NcclRedOp op,
                           CommHandle comm, StreamHandle stream) override;
  NcclResult broadcast(const void* sendBuf, void* recvBuf, size_t count, NcclDataType type, int root, CommHandle comm,
                       StreamHandle stream) override;
  NcclResult getUniqueId(UniqueId* id) override;
  NcclResult commInitRank(CommHandle* comm, int nranks, const UniqueId& id, int rank, bool blocking) override;
  NcclResult commDestroy(CommHandle comm) override;
  NcclResult commAbort(CommHandle comm) override;
  NcclResult commGetAsyncError(CommHandle comm, NcclResult* asyncError) override;
  NcclResult commCount(CommHandle comm, int* count) override;
  NcclResult commUserRank(CommHandle comm, int* rank) override;
  const char* getErrorString(NcclResult result) override;
  const char* getLastError(CommHandle comm) override;
  StreamState streamQuery(StreamHandle stream, std::string* error) override;

 private:
  // Records the call and returns its scripted result.
  NcclResult record(MockCall call);
  NcclResult startAsync(NcclResult r);
  // Locked: true while fewer than joinRanks_ ranks are in joinFile_.
  bool stillJoining();

  mutable std::mutex mutex_;
  std::vector<MockCall> calls_;
  std::map<std::string, int64_t> seen_;
  std::map<std::pair<std::string, int64_t>, NcclResult> failures_;
  int64_t inProgressPolls_ = 0;
  bool inProgressMode_ = false;
  NcclResult asyncError_ = NcclResult::Success;
  int64_t streamPending_ = 0;
  std::string streamError_;
  int shapeRank_ = 0;
  int shapeSize_ = 1;
  std::string joinDir_;
  std::string joinFile_;
  int joinRanks_ = 0;
  bool haveId_ = false;
  UniqueId id_;
  int64_t nextComm_ = 0xC0FFEE00;
};

}  // namespace atb_ops::nccl
