#include "comm/shm/shm_communicator.h"

#include <sys/uio.h>
#include <unistd.h>

#include <ATen/ops/empty.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "comm/shm/peer_wait.h"
#include "comm/shm/rendezvous.h"
#include "core/env.h"
#include "core/status.h"

namespace atb_ops::shm {

constexpr uint64_t kSegmentMagic = 0x31306d6873627461ULL;  // "atbshm01"

struct alignas(64) SegmentHeader {
  std::atomic<uint64_t> magic;  // written last by the root: a reader that sees it sees the rest
  uint64_t keyHash;
  int32_t rankSize;
  int32_t rootPid;
  std::atomic<int32_t> attached;
  // A rank that gives up (a peer died, timed out, a copy failed) leaves its reason here, so peers
  // waiting on someone else learn of it within one health check instead of waiting out the timeout.
  std::atomic<int32_t> abortClaim;
  std::atomic<int32_t> abortedBy;  // rank + 1; 0 while healthy
  char abortReason[240];
};

// One per rank, written only by that rank (pid once at attach, the rest every collective).
struct alignas(64) SlotHead {
  std::atomic<uint32_t> postSeq;  // futex word: this rank's entries for collective #postSeq are posted
  std::atomic<uint32_t> postWaiters;
  std::atomic<uint32_t> doneSeq;  // futex word: this rank finished reading its peers for #doneSeq
  std::atomic<uint32_t> doneWaiters;
  std::atomic<int32_t> pid;
  int32_t dtype;
  int32_t elemSize;
};

// What rank r posts about peer j: where r's bytes for j live (in r's address space) and how many
// bytes r sends to j and expects from j.
struct PeerEntry {
  uint64_t addr;
  uint64_t sendBytes;
  uint64_t recvBytes;
  uint64_t reserved;
};

namespace {

using Clock = std::chrono::steady_clock;

size_t roundUp(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}

SegmentHeader& headerOf(const MappedSegment& s) {
  return *static_cast<SegmentHeader*>(s.base());
}

std::string describe(const CommConfig& c, const std::string& jobKey) {
  return "commDomain '" + c.commDomain + "', rankSize " + std::to_string(c.rankSize) + ", job '" + jobKey + "'";
}

void sleepBackoff(int& attempt) {
  std::this_thread::sleep_for(std::chrono::microseconds(attempt < 50 ? 200 : 2000));
  ++attempt;
}

}  // namespace

ShmCommunicator::ShmCommunicator(const CommConfig& config) : rank_(config.rank), size_(config.rankSize) {
  ATB_CHECK(config.handle == 0, ERROR_INVALID_PARAM, "backend 'shm' takes no hcclComm handle, got ", config.handle);
  attach(config);
}

SlotHead& ShmCommunicator::slot(int32_t r) const {
  auto* base = static_cast<char*>(segment_.base()) + sizeof(SegmentHeader) + slotStride_ * r;
  return *reinterpret_cast<SlotHead*>(base);
}

PeerEntry* ShmCommunicator::entries(int32_t r) const {
  return reinterpret_cast<PeerEntry*>(reinterpret_cast<char*>(&slot(r)) + sizeof(SlotHead));
}

void ShmCommunicator::attach(const CommConfig& c) {
  const std::string jobKey = c.jobKey.empty() ? defaultJobKey(c.commMode) : c.jobKey;
  const uint64_t keyHash = fnv1a(jobKey + "|" + c.commDomain + "|" + std::to_string(size_));
  const std::string rdvPath = rendezvousPath(keyHash);
  slotStride_ = roundUp(sizeof(SlotHead) + sizeof(PeerEntry) * size_, 64);
  const size_t bytes = sizeof(SegmentHeader) + slotStride_ * size_;
  const auto timeout = peerTimeout();
  const auto deadline = Clock::now() + timeout;
  const pid_t self = ::getpid();

  auto claimSlot = [&]() {
    int32_t expected = 0;
    ATB_CHECK(slot(rank_).pid.compare_exchange_strong(expected, self), ERROR_INVALID_PARAM, "shm: rank ", rank_, " of ",
              describe(c, jobKey), " is already taken by pid ", expected, "; every rank needs its own 'rank'");
    headerOf(segment_).attached.fetch_add(1);
  };

  if (rank_ == c.rankRoot) {
    segment_ = MappedSegment::create(userPrefix() + randomToken(), bytes);
    SegmentHeader& h = headerOf(segment_);
    h.keyHash = keyHash;
    h.rankSize = size_;
    h.rootPid = self;
    h.magic.store(kSegmentMagic, std::memory_order_release);
    claimSlot();
    publishRendezvous(rdvPath, RendezvousRecord{segment_.name(), self, processStartTime(self)});
  } else {
    int attempt = 0;
    while (true) {
      if (auto record = readLiveRendezvous(rdvPath)) {
        MappedSegment seg = MappedSegment::open(record->segmentName);
        if (seg.valid() && seg.size() == bytes &&
            headerOf(seg).magic.load(std::memory_order_acquire) == kSegmentMagic && headerOf(seg).keyHash == keyHash &&
            headerOf(seg).rankSize == size_) {
          segment_ = std::move(seg);
          break;
        }
      }
      ATB_CHECK(Clock::now() < deadline, ERROR_COMM_TIMEOUT, "shm rendezvous: root rank ", c.rankRoot,
                " did not publish the communicator for ", describe(c, jobKey),
                " within ATB_OPS_TIMEOUT=", std::chrono::duration<double>(timeout).count(), " s");
      sleepBackoff(attempt);
    }
    claimSlot();
  }

  // The root's names go once everyone holds a mapping, or once the rendezvous has failed: either way
  // nothing is left behind in /dev/shm for a later run to trip over.
  auto removeNames = [&]() {
    if (rank_ != c.rankRoot) return;
    if (auto record = readLiveRendezvous(rdvPath); record && record->segmentName == segment_.name()) {
      ::unlink(rdvPath.c_str());
    }
    unlinkSegment(segment_.name());
  };
  // Everyone meets here, so a missing rank is reported at creation, not at the first collective.
  int attempt = 0;
  while (headerOf(segment_).attached.load() < size_) {
    if (Clock::now() >= deadline) {
      std::string missing;
      for (int32_t r = 0; r < size_; ++r) {
        if (slot(r).pid.load() == 0) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      removeNames();
      ATB_FAIL(ERROR_COMM_TIMEOUT, "shm rendezvous: rank(s) ", missing, " of ", describe(c, jobKey),
               " did not join within ATB_OPS_TIMEOUT=", std::chrono::duration<double>(timeout).count(), " s");
    }
    sleepBackoff(attempt);
  }
  removeNames();
}

void ShmCommunicator::checkPostedMatrix(const char* what) const {
  const SlotHead& mine = slot(rank_);
  for (int32_t i = 0; i < size_; ++i) {
    ATB_CHECK(slot(i).dtype == mine.dtype && slot(i).elemSize == mine.elemSize, ERROR_INVALID_TENSOR_DTYPE, what,
              ": rank ", i, " moves dtype ", c10::toString(static_cast<c10::ScalarType>(slot(i).dtype)), " but rank ",
              rank_, " moves ", c10::toString(static_cast<c10::ScalarType>(mine.dtype)));
  }
  const int64_t es = mine.elemSize;
  checkCountMatrix(
      size_, [&](int32_t i, int32_t j) { return static_cast<int64_t>(entries(i)[j].sendBytes) / es; },
      [&](int32_t j, int32_t i) { return static_cast<int64_t>(entries(j)[i].recvBytes) / es; }, what);
}

void ShmCommunicator::copyFromPeers(const at::Tensor& recv, const AllToAllVLayout& layout, std::string& error) const {
  auto* out = static_cast<char*>(recv.data_ptr());
  const int64_t es = recv.element_size();
  for (int32_t step = 0; step < size_; ++step) {
    // Rotating the start spreads the readers over the senders instead of all hitting rank 0 first.
    const int32_t src = (rank_ + step) % size_;
    const PeerEntry& from = entries(src)[rank_];
    size_t remaining = from.sendBytes;
    if (remaining == 0) continue;
    char* dst = out + layout.rdispls[src] * es;
    if (src == rank_) {
      std::memcpy(dst, reinterpret_cast<const void*>(from.addr), remaining);
      continue;
    }
    const pid_t pid = slot(src).pid.load();
    uint64_t remote = from.addr;
    while (remaining > 0) {
      iovec local{dst, remaining};
      iovec peer{reinterpret_cast<void*>(remote), remaining};
      const ssize_t n = ::process_vm_readv(pid, &local, 1, &peer, 1, 0);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        error = "process_vm_readv from rank " + std::to_string(src) + " (pid " + std::to_string(pid) +
                ") failed: " + std::strerror(errno) +
                (errno == EPERM ? " (ptrace is restricted here; use backend 'gloo')" : "");
        return;
      }
      dst += n;
      remote += static_cast<uint64_t>(n);
      remaining -= static_cast<size_t>(n);
    }
  }
}

void ShmCommunicator::abortPeers(const std::string& reason) {
  SegmentHeader& h = headerOf(segment_);
  int32_t unclaimed = 0;
  if (!h.abortClaim.compare_exchange_strong(unclaimed, rank_ + 1)) return;  // someone said it first
  std::strncpy(h.abortReason, reason.c_str(), sizeof(h.abortReason) - 1);
  h.abortedBy.store(rank_ + 1, std::memory_order_release);
}

void ShmCommunicator::checkHealth(const char* what) const {
  const SegmentHeader& h = headerOf(segment_);
  const int32_t by = h.abortedBy.load(std::memory_order_acquire);
  ATB_CHECK(by == 0, ERROR_COMM_PEER_DIED, what, ": rank ", by - 1, " gave up on this communicator: ",
            std::string(h.abortReason, strnlen(h.abortReason, sizeof(h.abortReason))));
  for (int32_t p = 0; p < size_; ++p) {
    const pid_t pid = slot(p).pid.load();
    ATB_CHECK(p == rank_ || processAlive(pid), ERROR_COMM_PEER_DIED, what, ": rank ", p, " (pid ", pid,
              ") exited while this rank waited on the collective");
  }
}

void ShmCommunicator::alltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) {
  static constexpr const char* kWhat = "shm alltoallv";
  ATB_CHECK(brokenBy_.empty(), ERROR_COMM_EMPTY, kWhat,
            ": this communicator failed earlier and is unusable: ", brokenBy_);
  if (headerOf(segment_).abortedBy.load(std::memory_order_acquire) != 0) checkHealth(kWhat);
  const uint32_t seq = ++seq_;
  const int64_t es = send.element_size();
  SlotHead& mine = slot(rank_);
  PeerEntry* mineEntries = entries(rank_);
  const auto* base = static_cast<const char*>(send.data_ptr());
  for (int32_t j = 0; j < size_; ++j) {
    mineEntries[j].addr = reinterpret_cast<uint64_t>(base + layout.sdispls[j] * es);
    mineEntries[j].sendBytes = static_cast<uint64_t>(layout.sendCounts[j] * es);
    mineEntries[j].recvBytes = static_cast<uint64_t>(layout.recvCounts[j] * es);
  }
  mine.dtype = static_cast<int32_t>(send.scalar_type());
  mine.elemSize = static_cast<int32_t>(es);
  const auto timeout = peerTimeout();
  const HealthCheck health = [this] { checkHealth(kWhat); };
  try {
    publish(mine.postSeq, mine.postWaiters, seq);
    for (int32_t p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      SlotHead& peer = slot(p);
      waitReached(peer.postSeq, peer.postWaiters, seq, WaitTarget{kWhat, p, peer.pid.load()}, timeout, health);
    }
  } catch (const c10::Error& e) {
    brokenBy_ = e.what_without_backtrace();
    abortPeers(brokenBy_);
    throw;
  }
  // Every rank checks the same posted matrix, so on a mismatch all raise together and stay in step.
  checkPostedMatrix(kWhat);

  std::string copyError;
  copyFromPeers(recv, layout, copyError);
  try {
    publish(mine.doneSeq, mine.doneWaiters, seq);
    for (int32_t p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      SlotHead& peer = slot(p);
      waitReached(peer.doneSeq, peer.doneWaiters, seq, WaitTarget{kWhat, p, peer.pid.load()}, timeout, health);
    }
  } catch (const c10::Error& e) {
    brokenBy_ = e.what_without_backtrace();
    abortPeers(brokenBy_);
    throw;
  }
  if (!copyError.empty()) {
    brokenBy_ = copyError;
    abortPeers(brokenBy_);
    ATB_FAIL(ERROR_RT_FAIL, kWhat, ": ", copyError);
  }
}

void ShmCommunicator::barrier() {
  at::Tensor none = at::empty({0}, at::kByte);
  AllToAllVLayout zero{std::vector<int64_t>(size_, 0), std::vector<int64_t>(size_, 0), std::vector<int64_t>(size_, 0),
                       std::vector<int64_t>(size_, 0)};
  alltoallv(none, zero, none);
}

namespace {
const bool registered = [] {
  registerBackend("shm", [](const CommConfig& c) { return std::make_shared<ShmCommunicator>(c); });
  return true;
}();
}  // namespace

}  // namespace atb_ops::shm
