#include "tests/native/nccl_mock_api.h"

#include <fstream>
#include <random>

namespace atb_ops::nccl {
namespace {

int64_t addr(const void* p) {
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p));
}

}  // namespace

void MockNcclApi::failOn(const std::string& op, int64_t nth, NcclResult result) {
  std::lock_guard<std::mutex> lock(mutex_);
  failures_[{op, nth}] = result;
}

void MockNcclApi::setInProgress(int64_t polls) {
  std::lock_guard<std::mutex> lock(mutex_);
  inProgressMode_ = true;
  inProgressPolls_ = polls;
}

void MockNcclApi::setAsyncError(NcclResult result) {
  std::lock_guard<std::mutex> lock(mutex_);
  asyncError_ = result;
}

void MockNcclApi::setStreamPending(int64_t polls, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  streamPending_ = polls;
  streamError_ = error;
}

void MockNcclApi::setCommShape(int rank, int size) {
  std::lock_guard<std::mutex> lock(mutex_);
  shapeRank_ = rank;
  shapeSize_ = size;
}

void MockNcclApi::setUniqueId(const UniqueId& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  id_ = id;
  haveId_ = true;
}

void MockNcclApi::setJoinDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  joinDir_ = dir;
}

bool MockNcclApi::stillJoining() {
  if (joinFile_.empty()) return false;
  std::ifstream f(joinFile_);
  int lines = 0;
  for (std::string line; std::getline(f, line);) ++lines;
  if (lines < joinRanks_) return true;
  joinFile_.clear();
  return false;
}

std::map<std::string, int64_t> MockNcclApi::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seen_;
}

std::vector<MockCall> MockNcclApi::calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_;
}

void MockNcclApi::clearCalls() {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_.clear();
}

NcclResult MockNcclApi::record(MockCall call) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t nth = seen_[call.op]++;
  auto it = failures_.find({call.op, nth});
  const NcclResult r = it == failures_.end() ? NcclResult::Success : it->second;
  call.ints["result"] = static_cast<int64_t>(r);
  calls_.push_back(std::move(call));
  return r;
}

NcclResult MockNcclApi::startAsync(NcclResult r) {
  std::lock_guard<std::mutex> lock(mutex_);
  return r == NcclResult::Success && inProgressMode_ ? NcclResult::InProgress : r;
}

NcclResult MockNcclApi::groupStart() {
  return record({"groupStart", {}, {}});
}

NcclResult MockNcclApi::groupEnd() {
  return startAsync(record({"groupEnd", {}, {}}));
}

NcclResult MockNcclApi::send(const void* buf, size_t count, NcclDataType type, int peer, CommHandle comm,
                             StreamHandle stream) {
  return record({"send",
                 {{"buf", addr(buf)},
                  {"count", static_cast<int64_t>(count)},
                  {"peer", peer},
                  {"comm", addr(comm)},
                  {"stream", addr(stream)}},
                 {{"dtype", dataTypeName(type)}}});
}

NcclResult MockNcclApi::recv(void* buf, size_t count, NcclDataType type, int peer, CommHandle comm,
                             StreamHandle stream) {
  return record({"recv",
                 {{"buf", addr(buf)},
                  {"count", static_cast<int64_t>(count)},
                  {"peer", peer},
                  {"comm", addr(comm)},
                  {"stream", addr(stream)}},
                 {{"dtype", dataTypeName(type)}}});
}

NcclResult MockNcclApi::allGather(const void* sendBuf, void* recvBuf, size_t sendCount, NcclDataType type,
                                  CommHandle comm, StreamHandle stream) {
  return startAsync(record({"allGather",
                            {{"send", addr(sendBuf)},
                             {"recv", addr(recvBuf)},
                             {"count", static_cast<int64_t>(sendCount)},
                             {"comm", addr(comm)},
                             {"stream", addr(stream)}},
                            {{"dtype", dataTypeName(type)}}}));
}

NcclResult MockNcclApi::allReduce(const void* sendBuf, void* recvBuf, size_t count, NcclDataType type, NcclRedOp op,
                                  CommHandle comm, StreamHandle stream) {
  return startAsync(record({"allReduce",
                            {{"send", addr(sendBuf)},
                             {"recv", addr(recvBuf)},
                             {"count", static_cast<int64_t>(count)},
                             {"op", static_cast<int64_t>(op)},
                             {"comm", addr(comm)},
                             {"stream", addr(stream)}},
                            {{"dtype", dataTypeName(type)}}}));
}

NcclResult MockNcclApi::reduceScatter(const void* sendBuf, void* recvBuf, size_t recvCount, NcclDataType type,
                                      NcclRedOp op, CommHandle comm, StreamHandle stream) {
  return startAsync(record({"reduceScatter",
                            {{"send", addr(sendBuf)},
                             {"recv", addr(recvBuf)},
                             {"count", static_cast<int64_t>(recvCount)},
                             {"op", static_cast<int64_t>(op)},
                             {"comm", addr(comm)},
                             {"stream", addr(stream)}},
                            {{"dtype", dataTypeName(type)}}}));
}

NcclResult MockNcclApi::broadcast(const void* sendBuf, void* recvBuf, size_t count, NcclDataType type, int root,
                                  CommHandle comm, StreamHandle stream) {
  return startAsync(record({"broadcast",
                            {{"send", addr(sendBuf)},
                             {"recv", addr(recvBuf)},
                             {"count", static_cast<int64_t>(count)},
                             {"root", root},
                             {"comm", addr(comm)},
                             {"stream", addr(stream)}},
                            {{"dtype", dataTypeName(type)}}}));
}

NcclResult MockNcclApi::getUniqueId(UniqueId* id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (haveId_) {
      *id = id_;
    } else {
      std::random_device rd;
      for (auto& b : id->bytes) b = static_cast<char>(rd() & 0xff);
    }
  }
  return record({"getUniqueId", {}, {{"id", toHex(*id)}}});
}

NcclResult MockNcclApi::commInitRank(CommHandle* comm, int nranks, const UniqueId& id, int rank, bool blocking) {
  int64_t handle = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    handle = nextComm_;
    nextComm_ += 0x100;
  }
  const NcclResult r = record({"commInitRank",
                               {{"nranks", nranks}, {"rank", rank}, {"blocking", blocking}, {"comm", handle}},
                               {{"id", toHex(id)}}});
  // Like NCCL, a failed init may still hand back a handle that must be aborted.
  *comm = reinterpret_cast<CommHandle>(static_cast<uintptr_t>(handle));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (r == NcclResult::Success && !joinDir_.empty()) {
      joinFile_ = joinDir_ + "/" + toHex(id).substr(0, 32);
      joinRanks_ = nranks;
      std::ofstream(joinFile_, std::ios::app)
          << rank << "\n";  // O_APPEND: short appends of concurrent ranks do not interleave
      return NcclResult::InProgress;
    }
  }
  return startAsync(r);
}

NcclResult MockNcclApi::commDestroy(CommHandle comm) {
  return record({"commDestroy", {{"comm", addr(comm)}}, {}});
}

NcclResult MockNcclApi::commAbort(CommHandle comm) {
  return record({"commAbort", {{"comm", addr(comm)}}, {}});
}

NcclResult MockNcclApi::commGetAsyncError(CommHandle /*comm*/, NcclResult* asyncError) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stillJoining()) {
      *asyncError = NcclResult::InProgress;
    } else if (inProgressMode_ && inProgressPolls_ != 0) {
      if (inProgressPolls_ > 0) --inProgressPolls_;
      *asyncError = NcclResult::InProgress;
    } else {
      *asyncError = asyncError_;
    }
  }
  // Polls are many and alike: count them instead of logging each.
  std::lock_guard<std::mutex> lock(mutex_);
  ++seen_["commGetAsyncError"];
  return NcclResult::Success;
}

NcclResult MockNcclApi::commCount(CommHandle comm, int* count) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    *count = shapeSize_;
  }
  return record({"commCount", {{"comm", addr(comm)}}, {}});
}

NcclResult MockNcclApi::commUserRank(CommHandle comm, int* rank) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    *rank = shapeRank_;
  }
  return record({"commUserRank", {{"comm", addr(comm)}}, {}});
}

const char* MockNcclApi::getErrorString(NcclResult result) {
  switch (result) {
    case NcclResult::Success: return "mock: no error";
    case NcclResult::InProgress: return "mock: operation in progress";
    case NcclResult::RemoteError: return "mock: remote process exited or there was a network error";
    default: return "mock: scripted failure";
  }
}

const char* MockNcclApi::getLastError(CommHandle) {
  return "mock last error";
}

StreamState MockNcclApi::streamQuery(StreamHandle stream, std::string* error) {
  record({"streamQuery", {{"stream", addr(stream)}}, {}});
  std::lock_guard<std::mutex> lock(mutex_);
  if (streamPending_ != 0) {
    if (streamPending_ > 0) --streamPending_;
    return StreamState::Pending;
  }
  if (!streamError_.empty()) {
    *error = streamError_;
    return StreamState::Failed;
  }
  return StreamState::Complete;
}

}  // namespace atb_ops::nccl
