#include "tests/native/hccl_mock_api.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <set>
#include <tuple>

namespace atb_ops::hccl {

namespace {

constexpr int32_t kEPtr = 2;

// What one rank brought to one collective.
struct Post {
  std::string fn;
  const char* sendBuf = nullptr;
  char* recvBuf = nullptr;
  std::vector<uint64_t> sendCounts, sdispls, recvCounts, rdispls;
  int32_t sendType = 0;
  int32_t recvType = 0;
  uint64_t count = 0;
  std::vector<SendRecvItem> items;
};

struct Round {
  std::vector<Post> posts;
  std::vector<bool> posted;
  int32_t nPosted = 0;
  int32_t nDone = 0;
  int32_t nLeft = 0;
  int32_t rc = kSuccess;  // the first failure any rank found; every rank returns it
};

// The ranks of one communicator. Their k-th collective calls meet in round k.
struct World {
  explicit World(int32_t n) : size(n), taken(n, false) {}
  const int32_t size;
  std::vector<bool> taken;
  std::mutex m;
  std::condition_variable cv;
  std::map<uint64_t, Round> rounds;
  // Point-to-point (HcclBatchSendRecv): the k-th send from a to b meets b's k-th receive from a.
  struct Mail {
    const SendRecvItem* item = nullptr;  // in the sender's list, alive until the sender returns
    bool consumed = false;
    int32_t rc = kSuccess;
  };
  std::map<std::pair<int32_t, int32_t>, uint64_t> sendSeq, recvSeq;
  std::map<std::tuple<int32_t, int32_t, uint64_t>, Mail> mail;
};

struct MockComm {
  std::shared_ptr<World> world;
  int32_t rank = 0;
  int32_t destroyed = 0;
  int32_t asyncPolls = 0;
  uint64_t nextRound = 0;
};

struct MockEvent {
  int32_t polls = 0;
};

thread_local int32_t tlsDevice = 0;

uint64_t u64(const void* p) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

}  // namespace

struct MockHcclApi::State {
  mutable std::mutex m;
  MockOptions options;
  std::vector<MockCall> log;
  std::deque<std::unique_ptr<MockComm>> comms;  // never shrinks: handles stay valid across reset()
  std::set<MockComm*> known;
  std::map<std::string, std::shared_ptr<World>> worldsByKey;
  std::set<MockEvent*> events;
  std::mt19937_64 rng{static_cast<uint64_t>(::getpid()) ^ 0x9e3779b97f4a7c15ULL};

  MockComm* find(CommHandle h) {
    auto* c = static_cast<MockComm*>(h);
    return known.count(c) ? c : nullptr;
  }

  MockComm* join(const std::shared_ptr<World>& w, int32_t rank) {
    comms.push_back(std::make_unique<MockComm>());
    MockComm* c = comms.back().get();
    c->world = w;
    c->rank = rank;
    w->taken[rank] = true;
    known.insert(c);
    return c;
  }

  // Logs the call; returns the injected failure for fn, or kSuccess to go on.
  int32_t begin(MockCall call) {
    std::lock_guard<std::mutex> lock(this->m);
    auto it = options.failWith.find(call.fn);
    call.result = it == options.failWith.end() ? kSuccess : it->second;
    log.push_back(std::move(call));
    return log.back().result;
  }

  // The size of a handle's world; 0 for an unknown handle.
  int32_t worldSize(CommHandle h) {
    std::lock_guard<std::mutex> lock(this->m);
    MockComm* c = find(h);
    return c == nullptr ? 0 : c->world->size;
  }

  void setResult(const std::string& fn, int32_t rc) {
    std::lock_guard<std::mutex> lock(this->m);
    for (auto it = log.rbegin(); it != log.rend(); ++it) {
      if (it->fn == fn) {
        it->result = rc;
        return;
      }
    }
  }

  // Meets the peers in this communicator's next round, then runs `deliver` for this rank.
  template <typename Deliver>
  int32_t collective(CommHandle h, Post post, Deliver deliver) {
    MockComm* c;
    int32_t timeoutMs;
    {
      std::lock_guard<std::mutex> lock(this->m);
      c = find(h);
      timeoutMs = options.collectiveTimeoutMs;
    }
    if (c == nullptr || c->destroyed > 0) return kEPtr;
    World& w = *c->world;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    std::unique_lock<std::mutex> lock(w.m);
    const uint64_t id = c->nextRound++;
    Round& r = w.rounds[id];
    if (r.posts.empty()) {
      r.posts.resize(w.size);
      r.posted.assign(w.size, false);
    }
    r.posts[c->rank] = std::move(post);
    r.posted[c->rank] = true;
    ++r.nPosted;
    w.cv.notify_all();
    if (!w.cv.wait_until(lock, deadline, [&] { return r.nPosted == w.size; })) return result::kTimeout;
    for (const Post& p : r.posts) {
      if (p.fn != r.posts[c->rank].fn || p.sendType != r.posts[c->rank].sendType) r.rc = result::kPara;
    }
    if (r.rc == kSuccess) {
      const int32_t rc = deliver(r.posts, c->rank, w.size);
      if (rc != kSuccess) r.rc = rc;
    }
    ++r.nDone;
    w.cv.notify_all();
    // Senders' buffers must outlive every reader: nobody leaves before all have copied.
    if (!w.cv.wait_until(lock, deadline, [&] { return r.nDone == w.size; })) return result::kTimeout;
    const int32_t rc = r.rc;
    if (++r.nLeft == w.size) w.rounds.erase(id);
    return rc;
  }
};

MockHcclApi::MockHcclApi() : state_(std::make_shared<State>()) {}

std::shared_ptr<MockHcclApi> MockHcclApi::instance() {
  static std::shared_ptr<MockHcclApi> api(new MockHcclApi());
  return api;
}

void MockHcclApi::reset() {
  std::lock_guard<std::mutex> lock(state_->m);
  state_->options = MockOptions();
  state_->log.clear();
  state_->worldsByKey.clear();
}

void MockHcclApi::configure(const MockOptions& options) {
  std::lock_guard<std::mutex> lock(state_->m);
  state_->options = options;
}

std::vector<MockCall> MockHcclApi::calls() const {
  std::lock_guard<std::mutex> lock(state_->m);
  return state_->log;
}

std::vector<CommHandle> MockHcclApi::makeUserComms(int32_t n) {
  std::lock_guard<std::mutex> lock(state_->m);
  auto w = std::make_shared<World>(n);
  std::vector<CommHandle> out;
  for (int32_t r = 0; r < n; ++r) out.push_back(state_->join(w, r));
  return out;
}

int32_t MockHcclApi::destroyCount(CommHandle comm) const {
  std::lock_guard<std::mutex> lock(state_->m);
  MockComm* c = state_->find(comm);
  return c == nullptr ? -1 : c->destroyed;
}

int32_t MockHcclApi::liveEvents() const {
  std::lock_guard<std::mutex> lock(state_->m);
  return static_cast<int32_t>(state_->events.size());
}

int32_t MockHcclApi::getRootInfo(RootInfo* info) {
  {
    std::lock_guard<std::mutex> lock(state_->m);
    for (size_t i = 0; i < info->size(); i += 8) {
      const uint64_t word = state_->rng();
      std::memcpy(info->data() + i, &word, std::min<size_t>(8, info->size() - i));
    }
  }
  MockCall call{"HcclGetRootInfo"};
  call.strings["rootInfo"] = std::string(info->data(), info->size());
  return state_->begin(std::move(call));
}

int32_t MockHcclApi::commInitRootInfo(uint32_t nRanks, const RootInfo& info, uint32_t rank, CommHandle* comm) {
  MockCall call{"HcclCommInitRootInfo"};
  call.ints["nRanks"] = nRanks;
  call.ints["rank"] = rank;
  call.ints["device"] = tlsDevice;
  call.strings["rootInfo"] = std::string(info.data(), info.size());
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  std::lock_guard<std::mutex> lock(state_->m);
  // Ranks that hold the same root info meet in one world, as HCCL's would.
  auto& w = state_->worldsByKey["root:" + std::string(info.data(), info.size())];
  if (!w) w = std::make_shared<World>(static_cast<int32_t>(nRanks));
  if (w->size != static_cast<int32_t>(nRanks) || rank >= nRanks || w->taken[rank]) return result::kPara;
  *comm = state_->join(w, static_cast<int32_t>(rank));
  return kSuccess;
}

int32_t MockHcclApi::commInitClusterInfo(const std::string& rankTableFile, uint32_t rank, CommHandle* comm) {
  MockCall call{"HcclCommInitClusterInfo"};
  call.ints["rank"] = rank;
  call.ints["device"] = tlsDevice;
  call.strings["rankTableFile"] = rankTableFile;
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  std::lock_guard<std::mutex> lock(state_->m);
  auto& w = state_->worldsByKey["cluster:" + rankTableFile];
  if (!w) w = std::make_shared<World>(state_->options.clusterRankSize);
  if (static_cast<int32_t>(rank) >= w->size || w->taken[rank]) return result::kPara;
  *comm = state_->join(w, static_cast<int32_t>(rank));
  return kSuccess;
}

int32_t MockHcclApi::commInitAll(uint32_t nDevices, int32_t* devices, CommHandle* comms) {
  MockCall call{"HcclCommInitAll"};
  call.ints["nDevices"] = nDevices;
  call.arrays["devices"] = std::vector<uint64_t>(devices, devices + nDevices);
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  std::lock_guard<std::mutex> lock(state_->m);
  auto w = std::make_shared<World>(static_cast<int32_t>(nDevices));
  for (uint32_t r = 0; r < nDevices; ++r) comms[r] = state_->join(w, static_cast<int32_t>(r));
  return kSuccess;
}

int32_t MockHcclApi::commDestroy(CommHandle comm) {
  MockCall call{"HcclCommDestroy"};
  call.comm = u64(comm);
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  std::lock_guard<std::mutex> lock(state_->m);
  MockComm* c = state_->find(comm);
  if (c == nullptr) return kEPtr;
  // A second destroy is a bug in the caller; count it so tests see it, and fail it as HCCL might.
  return ++c->destroyed == 1 ? kSuccess : result::kPara;
}

int32_t MockHcclApi::getRankSize(CommHandle comm, uint32_t* rankSize) {
  MockCall call{"HcclGetRankSize"};
  call.comm = u64(comm);
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  std::lock_guard<std::mutex> lock(state_->m);
  MockComm* c = state_->find(comm);
  if (c == nullptr) return kEPtr;
  *rankSize = static_cast<uint32_t>(c->world->size);
  return kSuccess;
}

int32_t MockHcclApi::getRankId(CommHandle comm, uint32_t* rank) {
  MockCall call{"HcclGetRankId"};
  call.comm = u64(comm);
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  std::lock_guard<std::mutex> lock(state_->m);
  MockComm* c = state_->find(comm);
  if (c == nullptr) return kEPtr;
  *rank = static_cast<uint32_t>(c->rank);
  return kSuccess;
}

int32_t MockHcclApi::getCommAsyncError(CommHandle comm, int32_t* asyncError) {
  MockCall call{"HcclGetCommAsyncError"};
  call.comm = u64(comm);
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  std::lock_guard<std::mutex> lock(state_->m);
  MockComm* c = state_->find(comm);
  if (c == nullptr) return kEPtr;
  const int32_t after = state_->options.asyncErrorAfterPolls;
  *asyncError = (after >= 0 && ++c->asyncPolls > after) ? state_->options.asyncErrorCode : kSuccess;
  return kSuccess;
}

std::string MockHcclApi::errorString(int32_t hcclResult) {
  return "mock HCCL says " + resultName(hcclResult);
}

int32_t MockHcclApi::alltoAllV(const void* sendBuf, const uint64_t* sendCounts, const uint64_t* sdispls,
                               int32_t sendType, const void* recvBuf, const uint64_t* recvCounts,
                               const uint64_t* rdispls, int32_t recvType, CommHandle comm, StreamHandle stream) {
  int32_t n = 0;
  {
    std::lock_guard<std::mutex> lock(state_->m);
    MockComm* c = state_->find(comm);
    if (c == nullptr) return kEPtr;
    n = c->world->size;
  }
  Post post;
  post.fn = "HcclAlltoAllV";
  post.sendBuf = static_cast<const char*>(sendBuf);
  post.recvBuf = static_cast<char*>(const_cast<void*>(recvBuf));
  post.sendCounts.assign(sendCounts, sendCounts + n);
  post.sdispls.assign(sdispls, sdispls + n);
  post.recvCounts.assign(recvCounts, recvCounts + n);
  post.rdispls.assign(rdispls, rdispls + n);
  post.sendType = sendType;
  post.recvType = recvType;

  MockCall call{"HcclAlltoAllV"};
  call.comm = u64(comm);
  call.stream = u64(stream);
  call.ints["sendType"] = sendType;
  call.ints["recvType"] = recvType;
  call.ints["sendBuf"] = static_cast<int64_t>(u64(sendBuf));
  call.ints["recvBuf"] = static_cast<int64_t>(u64(recvBuf));
  call.arrays["sendCounts"] = post.sendCounts;
  call.arrays["sdispls"] = post.sdispls;
  call.arrays["recvCounts"] = post.recvCounts;
  call.arrays["rdispls"] = post.rdispls;
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  if (sendType != recvType || dataTypeSize(sendType) == 0) return result::kPara;
  int32_t zerosFrom = 0;
  {
    std::lock_guard<std::mutex> lock(state_->m);
    zerosFrom = state_->options.zerosBugMinRanks;
  }
  const int32_t rc =
      state_->collective(comm, std::move(post), [&](const std::vector<Post>& posts, int32_t me, int32_t size) {
        const int64_t es = dataTypeSize(sendType);
        const Post& mine = posts[me];
        for (int32_t src = 0; src < size; ++src) {
          const Post& from = posts[src];
          if (from.sendCounts[me] != mine.recvCounts[src]) return result::kPara;
          const size_t bytes = from.sendCounts[me] * es;
          char* dst = mine.recvBuf + mine.rdispls[src] * es;
          if (zerosFrom > 0 && size >= zerosFrom) {
            std::memset(dst, 0, bytes);
          } else {
            std::memcpy(dst, from.sendBuf + from.sdispls[me] * es, bytes);
          }
        }
        return kSuccess;
      });
  if (rc != kSuccess) state_->setResult("HcclAlltoAllV", rc);
  return rc;
}

int32_t MockHcclApi::allGather(void* sendBuf, void* recvBuf, uint64_t sendCount, int32_t dataType, CommHandle comm,
                               StreamHandle stream) {
  MockCall call{"HcclAllGather"};
  call.comm = u64(comm);
  call.stream = u64(stream);
  call.ints["dataType"] = dataType;
  call.ints["count"] = static_cast<int64_t>(sendCount);
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  if (dataTypeSize(dataType) == 0) return result::kPara;
  Post post;
  post.fn = "HcclAllGather";
  post.sendBuf = static_cast<const char*>(sendBuf);
  post.recvBuf = static_cast<char*>(recvBuf);
  post.count = sendCount;
  post.sendType = dataType;
  return state_->collective(comm, std::move(post), [&](const std::vector<Post>& posts, int32_t me, int32_t size) {
    const int64_t es = dataTypeSize(dataType);
    for (int32_t src = 0; src < size; ++src) {
      if (posts[src].count != sendCount) return result::kPara;
      std::memcpy(posts[me].recvBuf + src * sendCount * es, posts[src].sendBuf, sendCount * es);
    }
    return kSuccess;
  });
}

int32_t MockHcclApi::batchSendRecv(SendRecvItem* items, uint32_t itemNum, CommHandle comm, StreamHandle stream) {
  MockCall call{"HcclBatchSendRecv"};
  call.comm = u64(comm);
  call.stream = u64(stream);
  call.ints["itemNum"] = itemNum;
  call.items.assign(items, items + itemNum);
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  return pointToPoint(items, itemNum, comm, "HcclBatchSendRecv");
}

int32_t MockHcclApi::pointToPoint(SendRecvItem* items, uint32_t itemNum, CommHandle comm, const char* fn) {
  MockComm* c;
  int32_t timeoutMs;
  {
    std::lock_guard<std::mutex> lock(state_->m);
    c = state_->find(comm);
    timeoutMs = state_->options.collectiveTimeoutMs;
  }
  if (c == nullptr || c->destroyed > 0) return kEPtr;
  // Point to point, as HCCL's: only ranks that list each other meet; a rank with nothing to do never calls.
  World& w = *c->world;
  const int32_t me = c->rank;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  std::unique_lock<std::mutex> lock(w.m);
  std::vector<std::tuple<int32_t, int32_t, uint64_t>> posted;
  for (uint32_t k = 0; k < itemNum; ++k) {
    const SendRecvItem& it = items[k];
    if (it.type != SendRecvType::kSend) continue;
    const int32_t dst = static_cast<int32_t>(it.remoteRank);
    if (dst < 0 || dst >= w.size || dst == me) return result::kPara;
    auto key = std::make_tuple(me, dst, w.sendSeq[{me, dst}]++);
    w.mail[key].item = &it;
    posted.push_back(key);
  }
  w.cv.notify_all();
  int32_t rc = kSuccess;
  for (uint32_t k = 0; k < itemNum && rc == kSuccess; ++k) {
    const SendRecvItem& it = items[k];
    if (it.type != SendRecvType::kRecv) continue;
    const int32_t src = static_cast<int32_t>(it.remoteRank);
    if (src < 0 || src >= w.size || src == me) {
      rc = result::kPara;
      break;
    }
    const auto key = std::make_tuple(src, me, w.recvSeq[{src, me}]++);
    if (!w.cv.wait_until(lock, deadline, [&] { return w.mail.count(key) > 0; })) {
      rc = result::kTimeout;
      break;
    }
    World::Mail& m = w.mail[key];
    const int64_t es = dataTypeSize(m.item->dataType);
    if (m.item->count != it.count || m.item->dataType != it.dataType || es == 0) {
      m.rc = rc = result::kPara;
    } else {
      std::memcpy(it.buf, m.item->buf, it.count * es);
    }
    m.consumed = true;
    w.cv.notify_all();
  }
  // The send buffers must stay valid until every receiver has copied.
  for (const auto& key : posted) {
    if (!w.cv.wait_until(lock, deadline, [&] { return w.mail[key].consumed; })) {
      if (rc == kSuccess) rc = result::kTimeout;
      w.mail.erase(key);
      continue;
    }
    if (rc == kSuccess) rc = w.mail[key].rc;
    w.mail.erase(key);
  }
  lock.unlock();
  if (rc != kSuccess) state_->setResult(fn, rc);
  return rc;
}

int32_t MockHcclApi::send(void* sendBuf, uint64_t count, int32_t dataType, uint32_t destRank, CommHandle comm,
                          StreamHandle stream) {
  MockCall call{"HcclSend"};
  call.comm = u64(comm);
  call.stream = u64(stream);
  call.ints["count"] = static_cast<int64_t>(count);
  call.ints["dataType"] = dataType;
  call.ints["destRank"] = destRank;
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  SendRecvItem item{SendRecvType::kSend, sendBuf, count, dataType, destRank};
  return pointToPoint(&item, 1, comm, "HcclSend");
}

int32_t MockHcclApi::recv(void* recvBuf, uint64_t count, int32_t dataType, uint32_t srcRank, CommHandle comm,
                          StreamHandle stream) {
  MockCall call{"HcclRecv"};
  call.comm = u64(comm);
  call.stream = u64(stream);
  call.ints["count"] = static_cast<int64_t>(count);
  call.ints["dataType"] = dataType;
  call.ints["srcRank"] = srcRank;
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  SendRecvItem item{SendRecvType::kRecv, recvBuf, count, dataType, srcRank};
  return pointToPoint(&item, 1, comm, "HcclRecv");
}

// The reductions, broadcast and the V forms are recorded with their arguments only: the HCCL backend runs
// them with real data over csrc/emulated/hccl/ (tests/atb/test_collectives.py, backend "hccl"); this mock checks
// what is passed.
int32_t MockHcclApi::allGatherV(void* sendBuf, uint64_t sendCount, void* recvBuf, const uint64_t* recvCounts,
                                const uint64_t* recvDispls, int32_t dataType, CommHandle comm, StreamHandle stream) {
  MockCall call{"HcclAllGatherV"};
  call.comm = u64(comm);
  call.stream = u64(stream);
  call.ints["sendCount"] = static_cast<int64_t>(sendCount);
  call.ints["dataType"] = dataType;
  call.ints["sendBuf"] = static_cast<int64_t>(u64(sendBuf));
  call.ints["recvBuf"] = static_cast<int64_t>(u64(recvBuf));
  const int32_t n = state_->worldSize(comm);
  if (n <= 0) return kEPtr;
  call.arrays["recvCounts"].assign(recvCounts, recvCounts + n);
  call.arrays["recvDispls"].assign(recvDispls, recvDispls + n);
  return state_->begin(std::move(call));
}

int32_t MockHcclApi::allReduce(void* sendBuf, void* recvBuf, uint64_t count, int32_t dataType, int32_t op,
                               CommHandle comm, StreamHandle stream) {
  MockCall call{"HcclAllReduce"};
  call.comm = u64(comm);
  call.stream = u64(stream);
  call.ints["count"] = static_cast<int64_t>(count);
  call.ints["dataType"] = dataType;
  call.ints["op"] = op;
  call.ints["sendBuf"] = static_cast<int64_t>(u64(sendBuf));
  call.ints["recvBuf"] = static_cast<int64_t>(u64(recvBuf));
  return state_->begin(std::move(call));
}

int32_t MockHcclApi::reduceScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, int32_t dataType, int32_t op,
                                   CommHandle comm, StreamHandle stream) {
  MockCall call{"HcclReduceScatter"};
  call.comm = u64(comm);
  call.stream = u64(stream);
  call.ints["recvCount"] = static_cast<int64_t>(recvCount);
  call.ints["dataType"] = dataType;
  call.ints["op"] = op;
  call.ints["sendBuf"] = static_cast<int64_t>(u64(sendBuf));
  call.ints["recvBuf"] = static_cast<int64_t>(u64(recvBuf));
  return state_->begin(std::move(call));
}

int32_t MockHcclApi::reduceScatterV(void* sendBuf, const uint64_t* sendCounts, const uint64_t* sendDispls,
                                    void* recvBuf, uint64_t recvCount, int32_t dataType, int32_t op, CommHandle comm,
                                    StreamHandle stream) {
  MockCall call{"HcclReduceScatterV"};
  call.comm = u64(comm);
  call.stream = u64(stream);
  call.ints["recvCount"] = static_cast<int64_t>(recvCount);
  call.ints["dataType"] = dataType;
  call.ints["op"] = op;
  call.ints["sendBuf"] = static_cast<int64_t>(u64(sendBuf));
  call.ints["recvBuf"] = static_cast<int64_t>(u64(recvBuf));
  const int32_t n = state_->worldSize(comm);
  if (n <= 0) return kEPtr;
  call.arrays["sendCounts"].assign(sendCounts, sendCounts + n);
  call.arrays["sendDispls"].assign(sendDispls, sendDispls + n);
  return state_->begin(std::move(call));
}

int32_t MockHcclApi::broadcast(void* buf, uint64_t count, int32_t dataType, uint32_t root, CommHandle comm,
                               StreamHandle stream) {
  MockCall call{"HcclBroadcast"};
  call.comm = u64(comm);
  call.stream = u64(stream);
  call.ints["count"] = static_cast<int64_t>(count);
  call.ints["dataType"] = dataType;
  call.ints["root"] = root;
  call.ints["buf"] = static_cast<int64_t>(u64(buf));
  return state_->begin(std::move(call));
}

int32_t MockHcclApi::barrier(CommHandle comm, StreamHandle stream) {
  MockCall call{"HcclBarrier"};
  call.comm = u64(comm);
  call.stream = u64(stream);
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  Post post;
  post.fn = "HcclBarrier";
  return state_->collective(comm, std::move(post), [](const std::vector<Post>&, int32_t, int32_t) { return kSuccess; });
}

int32_t MockHcclApi::getDevice(int32_t* device) {
  MockCall call{"aclrtGetDevice"};
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  *device = tlsDevice;
  return kSuccess;
}

int32_t MockHcclApi::setDevice(int32_t device) {
  MockCall call{"aclrtSetDevice"};
  call.ints["device"] = device;
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  tlsDevice = device;
  return kSuccess;
}

StreamHandle MockHcclApi::currentStream(int32_t device) {
  uint64_t base;
  {
    std::lock_guard<std::mutex> lock(state_->m);
    base = state_->options.streamBase;
  }
  MockCall call{"currentStream"};
  call.ints["device"] = device;
  call.stream = base + static_cast<uint64_t>(device);
  state_->begin(std::move(call));
  return reinterpret_cast<StreamHandle>(static_cast<uintptr_t>(base + static_cast<uint64_t>(device)));
}

int32_t MockHcclApi::createEvent(EventHandle* event) {
  MockCall call{"aclrtCreateEvent"};
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  std::lock_guard<std::mutex> lock(state_->m);
  auto* e = new MockEvent();
  state_->events.insert(e);
  *event = e;
  return kSuccess;
}

int32_t MockHcclApi::recordEvent(EventHandle /*event*/, StreamHandle stream) {
  MockCall call{"aclrtRecordEvent"};
  call.stream = u64(stream);
  return state_->begin(std::move(call));
}

int32_t MockHcclApi::queryEvent(EventHandle event, bool* complete) {
  MockCall call{"aclrtQueryEventStatus"};
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  std::lock_guard<std::mutex> lock(state_->m);
  auto* e = static_cast<MockEvent*>(event);
  if (!state_->events.count(e)) return kEPtr;
  const int32_t needed = state_->options.eventPollsToComplete;
  *complete = needed >= 0 && e->polls++ >= needed;
  return kSuccess;
}

int32_t MockHcclApi::destroyEvent(EventHandle event) {
  MockCall call{"aclrtDestroyEvent"};
  if (const int32_t rc = state_->begin(std::move(call)); rc != kSuccess) return rc;
  std::lock_guard<std::mutex> lock(state_->m);
  auto* e = static_cast<MockEvent*>(event);
  if (!state_->events.erase(e)) return kEPtr;
  delete e;
  return kSuccess;
}

std::string MockHcclApi::runtimeErrorString(int32_t aclError) {
  return "mock ACL error " + std::to_string(aclError);
}

}  // namespace atb_ops::hccl
