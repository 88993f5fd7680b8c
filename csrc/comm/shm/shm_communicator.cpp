#include "comm/shm/shm_communicator.h"

#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ATen/ops/empty.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "comm/shm/arena.h"
#include "comm/shm/peer_wait.h"
#include "comm/shm/rendezvous.h"
#include "core/env.h"
#include "core/status.h"

namespace atb_ops::shm {

constexpr uint64_t kSegmentMagic = 0x32306d6873627461ULL;  // "atbshm02"
constexpr uint32_t kNotEager = 0xffffffffu;
constexpr size_t kMaxEagerBytes = size_t{256} << 10;  // per rank and parity, whatever the limit
constexpr size_t kEagerAlign = 64;
constexpr size_t kCpuWords = 16;  // 1024 CPUs
constexpr int64_t kArenaOutputMin = int64_t{64} << 10;

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
  uint32_t eagerBytes;             // the root's choice; every rank lays its slot out with it
  char abortReason[232];
};

// One per rank, written only by that rank (pid once at attach, the sequence words every call).
struct alignas(64) SlotHead {
  std::atomic<uint32_t> postSeq;  // futex word: this rank's post for collective #postSeq is complete
  std::atomic<uint32_t> postWaiters;
  std::atomic<uint32_t> doneSeq;  // futex word: this rank finished touching its peers' buffers for #doneSeq
  std::atomic<uint32_t> doneWaiters;
  std::atomic<int32_t> pid;
  uint64_t cpus[kCpuWords];  // the CPUs this rank may run on (sched_getaffinity at attach)
  // This rank's shared-memory arena (arena.h): its address here, its size (0: none) and its memfd.
  uint64_t arenaBase;
  uint64_t arenaBytes;
  int32_t arenaFd;
  std::atomic<int32_t> arenaMapped;  // 0 not yet, 1 this rank mapped every peer's arena, 2 it could not
};

// What rank r posts about peer j for one call: where r's bytes for j live and where j's bytes go (both
// in r's address space), how many bytes flow each way, and whether the bytes for j wait in r's eager
// buffer.
struct PeerEntry {
  uint64_t sendAddr;
  uint64_t recvAddr;
  uint64_t sendBytes;
  uint64_t recvBytes;
  uint32_t eagerOffset;  // kNotEager: j reads sendAddr directly
  uint32_t reserved;
};

struct alignas(64) PostBlock {
  int32_t dtype;
  int32_t elemSize;
  // PeerEntry entries[rankSize] follow
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

ShmCommunicator::ShmCommunicator(const CommConfig& config)
    : rank_(config.rank), size_(config.rankSize), eagerLimit_(shmEagerLimit()), split_(shmSplit()), spin_(true) {
  ATB_CHECK(config.handle == 0, ERROR_INVALID_PARAM, "backend 'shm' takes no hcclComm handle, got ", config.handle);
  push_.assign(static_cast<size_t>(size_) * size_, 0);
  load_.assign(size_, 0.0);
  attach(config);
}

void ShmCommunicator::setGeometry(size_t eagerBytes) {
  eagerBytes_ = eagerBytes;
  postStride_ = roundUp(sizeof(PostBlock) + sizeof(PeerEntry) * size_, 64);
  slotStride_ = roundUp(sizeof(SlotHead) + 2 * postStride_ + 2 * eagerBytes_, 64);
}

SlotHead& ShmCommunicator::slot(int32_t r) const {
  auto* base = static_cast<char*>(segment_.base()) + sizeof(SegmentHeader) + slotStride_ * r;
  return *reinterpret_cast<SlotHead*>(base);
}

PostBlock& ShmCommunicator::post(int32_t r, uint32_t parity) const {
  auto* base = reinterpret_cast<char*>(&slot(r)) + sizeof(SlotHead) + postStride_ * parity;
  return *reinterpret_cast<PostBlock*>(base);
}

PeerEntry* ShmCommunicator::entries(int32_t r, uint32_t parity) const {
  return reinterpret_cast<PeerEntry*>(reinterpret_cast<char*>(&post(r, parity)) + sizeof(PostBlock));
}

char* ShmCommunicator::eagerBuffer(int32_t r, uint32_t parity) const {
  return reinterpret_cast<char*>(&slot(r)) + sizeof(SlotHead) + 2 * postStride_ + eagerBytes_ * parity;
}

void ShmCommunicator::attach(const CommConfig& c) {
  Arena& arena = Arena::instance();  // raises on a malformed ATB_OPS_SHM_ARENA, before anything is claimed
  const std::string jobKey = c.jobKey.empty() ? defaultJobKey(c.commMode) : c.jobKey;
  const uint64_t keyHash = fnv1a(jobKey + "|" + c.commDomain + "|" + std::to_string(size_));
  const std::string rdvPath = rendezvousPath(keyHash);
  // The root sizes the eager buffers (its ATB_OPS_SHM_EAGER); the others read the size from the header.
  const size_t rootEager = std::min(kMaxEagerBytes, roundUp(static_cast<size_t>(eagerLimit_), kEagerAlign) * size_);
  setGeometry(rootEager);
  const size_t headerBytes = sizeof(SegmentHeader);
  const auto timeout = peerTimeout();
  const auto deadline = Clock::now() + timeout;
  const pid_t self = ::getpid();

  auto claimSlot = [&]() {
    int32_t expected = 0;
    ATB_CHECK(slot(rank_).pid.compare_exchange_strong(expected, self), ERROR_INVALID_PARAM, "shm: rank ", rank_, " of ",
              describe(c, jobKey), " is already taken by pid ", expected, "; every rank needs its own 'rank'");
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof(mine), &mine) != 0) CPU_SET(0, &mine);
    for (size_t w = 0; w < kCpuWords; ++w) {
      uint64_t bits = 0;
      for (size_t b = 0; b < 64; ++b) {
        if (CPU_ISSET(w * 64 + b, &mine)) bits |= uint64_t{1} << b;
      }
      slot(rank_).cpus[w] = bits;
    }
    slot(rank_).arenaBase = reinterpret_cast<uint64_t>(arena.base());
    slot(rank_).arenaBytes = arena.enabled() ? arena.bytes() : 0;
    slot(rank_).arenaFd = arena.fd();
    headerOf(segment_).attached.fetch_add(1);  // publishes the slot's pid and cpus
  };

  if (rank_ == c.rankRoot) {
    segment_ = MappedSegment::create(userPrefix() + randomToken(), headerBytes + slotStride_ * size_);
    SegmentHeader& h = headerOf(segment_);
    h.keyHash = keyHash;
    h.rankSize = size_;
    h.rootPid = self;
    h.eagerBytes = static_cast<uint32_t>(eagerBytes_);
    h.magic.store(kSegmentMagic, std::memory_order_release);
    claimSlot();
    publishRendezvous(rdvPath, RendezvousRecord{segment_.name(), self, processStartTime(self)});
  } else {
    int attempt = 0;
    while (true) {
      if (auto record = readLiveRendezvous(rdvPath)) {
        MappedSegment seg = MappedSegment::open(record->segmentName);
        if (seg.valid() && seg.size() >= headerBytes &&
            headerOf(seg).magic.load(std::memory_order_acquire) == kSegmentMagic && headerOf(seg).keyHash == keyHash &&
            headerOf(seg).rankSize == size_) {
          setGeometry(headerOf(seg).eagerBytes);
          if (seg.size() == headerBytes + slotStride_ * size_) {
            segment_ = std::move(seg);
            break;
          }
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
  // Spin while waiting only if the ranks can all run at once: on the CPUs they may use together (each
  // rank pinned to its own core counts), there is one per rank.
  int cpus = 0;
  for (size_t w = 0; w < kCpuWords; ++w) {
    uint64_t all = 0;
    for (int32_t r = 0; r < size_; ++r) all |= slot(r).cpus[w];
    cpus += __builtin_popcountll(all);
  }
  spin_ = size_ <= cpus;
  mapPeerArenas(c, jobKey, deadline);
}

void ShmCommunicator::mapPeerArenas(const CommConfig& c, const std::string& jobKey, Clock::time_point deadline) {
  const pid_t self = ::getpid();
  Arena& arena = Arena::instance();
  peerArena_.clear();
  peerArena_.resize(size_);
  peerBase_.assign(size_, nullptr);
  bool ok = true;
  for (int32_t p = 0; p < size_; ++p) {
    const SlotHead& peer = slot(p);
    if (peer.arenaBytes == 0) {
      ok = false;
    } else if (peer.pid.load() == self) {
      peerBase_[p] = arena.base();  // a thread of this process (commMode 1): the same arena
    } else {
      peerArena_[p] = PeerArenaMapping::map(peer.pid.load(), peer.arenaFd, peer.arenaBytes);
      peerBase_[p] = peerArena_[p].base();
      ok = ok && peerArena_[p].valid();
    }
  }
  slot(rank_).arenaMapped.store(ok ? 1 : 2);
  // Every rank must agree whether the arena paths are on, so all wait for all verdicts.
  int attempt = 0;
  arenaOk_ = true;
  for (int32_t p = 0; p < size_; ++p) {
    int32_t verdict;
    while ((verdict = slot(p).arenaMapped.load()) == 0) {
      ATB_CHECK(Clock::now() < deadline, ERROR_COMM_TIMEOUT, "shm rendezvous: rank ", p, " (pid ", slot(p).pid.load(),
                ") of ", describe(c, jobKey), " did not finish mapping its peers' arenas within ATB_OPS_TIMEOUT");
      sleepBackoff(attempt);
    }
    arenaOk_ = arenaOk_ && verdict == 1;
  }
  if (!arenaOk_) {
    peerArena_.clear();
    peerBase_.assign(size_, nullptr);
  }
}

at::Tensor ShmCommunicator::emptyOutput(c10::IntArrayRef sizes, const at::TensorOptions& options) {
  // Outputs in the arena let senders write them with memcpy; tiny ones go eager anyway.
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(c10::typeMetaToScalarType(options.dtype())));
  if (arenaOk_ && size_ > 1 && options.device().is_cpu() && bytes >= kArenaOutputMin) {
    return emptyShared(sizes, options);
  }
  return at::empty(sizes, options);
}

void ShmCommunicator::checkPostedMatrix(uint32_t parity, const char* what) const {
  const PostBlock& mine = post(rank_, parity);
  for (int32_t i = 0; i < size_; ++i) {
    const PostBlock& theirs = post(i, parity);
    ATB_CHECK(theirs.dtype == mine.dtype && theirs.elemSize == mine.elemSize, ERROR_INVALID_TENSOR_DTYPE, what,
              ": rank ", i, " moves dtype ", c10::toString(static_cast<c10::ScalarType>(theirs.dtype)), " but rank ",
              rank_, " moves ", c10::toString(static_cast<c10::ScalarType>(mine.dtype)));
  }
  const int64_t es = mine.elemSize;
  checkCountMatrix(
      size_, [&](int32_t i, int32_t j) { return static_cast<int64_t>(entries(i, parity)[j].sendBytes) / es; },
      [&](int32_t j, int32_t i) { return static_cast<int64_t>(entries(j, parity)[i].recvBytes) / es; }, what);
}

bool ShmCommunicator::inArena(int32_t owner, uint64_t addr, uint64_t bytes) const {
  const SlotHead& o = slot(owner);
  return o.arenaBytes > 0 && addr >= o.arenaBase && bytes <= o.arenaBytes && addr - o.arenaBase <= o.arenaBytes - bytes;
}

char* ShmCommunicator::arenaPtr(int32_t owner, uint64_t addr) const {
  return peerBase_[owner] + (addr - slot(owner).arenaBase);
}

uint64_t ShmCommunicator::directBytes(uint32_t parity, int32_t src, int32_t dst) const {
  const PeerEntry& e = entries(src, parity)[dst];
  return (src == dst || e.eagerOffset != kNotEager) ? 0 : e.sendBytes;
}

bool ShmCommunicator::pullByMemcpy(uint32_t parity, int32_t src, int32_t dst) const {
  const PeerEntry& e = entries(src, parity)[dst];
  return arenaOk_ && inArena(src, e.sendAddr, e.sendBytes);
}

bool ShmCommunicator::pushByMemcpy(uint32_t parity, int32_t src, int32_t dst) const {
  return arenaOk_ && inArena(dst, entries(dst, parity)[src].recvAddr, entries(src, parity)[dst].sendBytes);
}

void ShmCommunicator::planSplit(uint32_t parity) {
  // Every direct message src -> dst is split into a head the receiver pulls and a tail the sender
  // pushes (push_[src * size + dst] bytes). Costs are in memcpy-byte units: a byte costs 1 where the
  // other side's buffer is in its arena (a memcpy through the mapping), 2 otherwise (process_vm_readv/
  // writev pin pages and copy page by page). Each message starts on its cheaper side (ties: the
  // receiver, which keeps the output in its own cache); then, if ATB_OPS_SHM_SPLIT allows, large
  // messages move bytes from the busier side to the other until loads even out. Every rank computes
  // the same plan from the same posted matrix.
  constexpr uint64_t kMinSplit = uint64_t{256} << 10;  // a split costs a copy call on each side
  constexpr uint64_t kGranule = 4096;
  for (int32_t r = 0; r < size_; ++r) load_[r] = static_cast<double>(entries(r, parity)[r].sendBytes);
  bool any = false;
  for (int32_t src = 0; src < size_; ++src) {
    for (int32_t dst = 0; dst < size_; ++dst) {
      uint64_t& pushed = push_[static_cast<size_t>(src) * size_ + dst];
      const uint64_t direct = directBytes(parity, src, dst);
      const double pullCost = pullByMemcpy(parity, src, dst) ? 1.0 : 2.0;
      const double pushCost = pushByMemcpy(parity, src, dst) ? 1.0 : 2.0;
      pushed = pushCost < pullCost ? direct : 0;
      const double bytes = static_cast<double>(direct);
      if (pushed > 0) {
        load_[src] += pushCost * bytes;
      } else if (direct > 0) {
        load_[dst] += pullCost * bytes;
      } else if (src != dst) {
        load_[dst] += static_cast<double>(entries(src, parity)[dst].sendBytes);  // eager: the receiver copies
      }
      any = any || direct >= kMinSplit;
    }
  }
  if (!split_ || !any) return;
  for (int pass = 0; pass < 2; ++pass) {
    for (int32_t src = 0; src < size_; ++src) {
      for (int32_t dst = 0; dst < size_; ++dst) {
        const uint64_t direct = directBytes(parity, src, dst);
        if (direct < kMinSplit || load_[dst] == load_[src]) continue;
        uint64_t& pushed = push_[static_cast<size_t>(src) * size_ + dst];
        const double pullCost = pullByMemcpy(parity, src, dst) ? 1.0 : 2.0;
        const double pushCost = pushByMemcpy(parity, src, dst) ? 1.0 : 2.0;
        const double gap = std::abs(load_[dst] - load_[src]) / (pullCost + pushCost);
        const bool toSender = load_[dst] > load_[src];
        const uint64_t room = toSender ? direct - pushed : pushed;
        const uint64_t delta = std::min<uint64_t>(room, static_cast<uint64_t>(gap)) / kGranule * kGranule;
        if (delta == 0) continue;
        const double d = static_cast<double>(delta);
        if (toSender) {
          pushed += delta;
          load_[dst] -= pullCost * d;
          load_[src] += pushCost * d;
        } else {
          pushed -= delta;
          load_[src] -= pushCost * d;
          load_[dst] += pullCost * d;
        }
      }
    }
  }
}

namespace {

// Copies `bytes` between this process and `pid` (read: remote -> local; write: local -> remote).
// Returns false with `error` set when the kernel refuses.
bool crossCopy(pid_t pid, int32_t peer, bool write, char* local, uint64_t remote, uint64_t bytes, std::string& error) {
  if (pid == ::getpid()) {  // commMode 1: the ranks are threads of this process
    if (write) {
      std::memcpy(reinterpret_cast<void*>(remote), local, bytes);
    } else {
      std::memcpy(local, reinterpret_cast<const void*>(remote), bytes);
    }
    return true;
  }
  while (bytes > 0) {
    iovec mine{local, bytes};
    iovec theirs{reinterpret_cast<void*>(remote), bytes};
    const ssize_t n =
        write ? ::process_vm_writev(pid, &mine, 1, &theirs, 1, 0) : ::process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      error = std::string(write ? "process_vm_writev to" : "process_vm_readv from") + " rank " + std::to_string(peer) +
              " (pid " + std::to_string(pid) + ") failed: " + std::strerror(errno) +
              (errno == EPERM ? " (ptrace is restricted here; use backend 'gloo')" : "");
      return false;
    }
    local += n;
    remote += static_cast<uint64_t>(n);
    bytes -= static_cast<uint64_t>(n);
  }
  return true;
}

}  // namespace

void ShmCommunicator::copyToSelf(uint32_t parity) const {
  const PeerEntry& self = entries(rank_, parity)[rank_];
  if (self.sendBytes > 0) {
    std::memcpy(reinterpret_cast<void*>(self.recvAddr), reinterpret_cast<const void*>(self.sendAddr), self.sendBytes);
  }
}

void ShmCommunicator::moveData(uint32_t parity, bool selfDone, std::string& error) const {
  const PeerEntry* mine = entries(rank_, parity);
  if (!selfDone) copyToSelf(parity);
  for (int32_t step = 1; step < size_ && error.empty(); ++step) {
    // Rotating the start spreads the readers over the senders instead of all hitting rank 0 first.
    const int32_t src = (rank_ + step) % size_;
    const PeerEntry& in = entries(src, parity)[rank_];
    char* dst = reinterpret_cast<char*>(mine[src].recvAddr);
    if (in.sendBytes > 0 && in.eagerOffset != kNotEager) {
      std::memcpy(dst, eagerBuffer(src, parity) + in.eagerOffset, in.sendBytes);
    } else if (const uint64_t head = directBytes(parity, src, rank_) - pushed(src, rank_); head > 0) {
      if (pullByMemcpy(parity, src, rank_)) {
        std::memcpy(dst, arenaPtr(src, in.sendAddr), head);
      } else if (!crossCopy(slot(src).pid.load(), src, false, dst, in.sendAddr, head, error)) {
        return;
      }
    }
    // Our pushes go the other way round the ring, so a receiver gets its pull and the push at once.
    const int32_t to = (rank_ - step + size_) % size_;
    if (const uint64_t tail = pushed(rank_, to); tail > 0) {
      const uint64_t offset = mine[to].sendBytes - tail;
      char* local = reinterpret_cast<char*>(mine[to].sendAddr) + offset;
      const uint64_t remote = entries(to, parity)[rank_].recvAddr + offset;
      if (pushByMemcpy(parity, rank_, to)) {
        std::memcpy(arenaPtr(to, remote), local, tail);
      } else if (!crossCopy(slot(to).pid.load(), to, true, local, remote, tail, error)) {
        return;
      }
    }
  }
}

bool ShmCommunicator::touchesMyBuffers(uint32_t parity, int32_t p) const {
  const bool pullsMine = directBytes(parity, rank_, p) > pushed(rank_, p);  // p reads our send buffer
  const bool pushesMine = pushed(p, rank_) > 0;                             // p writes our receive buffer
  return pullsMine || pushesMine;
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
  const uint32_t parity = seq & 1u;
  const int64_t es = send.element_size();

  // Post: addresses and sizes, small messages copied into the eager buffer of this parity.
  PostBlock& mine = post(rank_, parity);
  PeerEntry* out = entries(rank_, parity);
  const auto* sendBase = static_cast<const char*>(send.data_ptr());
  auto* recvBase = static_cast<char*>(recv.data_ptr());
  char* eager = eagerBuffer(rank_, parity);
  size_t eagerUsed = 0;
  for (int32_t j = 0; j < size_; ++j) {
    PeerEntry& e = out[j];
    const char* src = sendBase + layout.sdispls[j] * es;
    const uint64_t bytes = static_cast<uint64_t>(layout.sendCounts[j] * es);
    e.sendAddr = reinterpret_cast<uint64_t>(src);
    e.recvAddr = reinterpret_cast<uint64_t>(recvBase + layout.rdispls[j] * es);
    e.sendBytes = bytes;
    e.recvBytes = static_cast<uint64_t>(layout.recvCounts[j] * es);
    e.eagerOffset = kNotEager;
    const size_t room = roundUp(bytes, kEagerAlign);
    if (j != rank_ && bytes > 0 && static_cast<int64_t>(bytes) <= eagerLimit_ && eagerUsed + room <= eagerBytes_) {
      std::memcpy(eager + eagerUsed, src, bytes);
      e.eagerOffset = static_cast<uint32_t>(eagerUsed);
      eagerUsed += room;
    }
  }
  mine.dtype = static_cast<int32_t>(send.scalar_type());
  mine.elemSize = static_cast<int32_t>(es);
  const auto timeout = peerTimeout();
  const HealthCheck health = [this] { checkHealth(kWhat); };
  publish(slot(rank_).postSeq, slot(rank_).postWaiters, seq);
  // The self copy needs no peer: it overlaps the wait for the others' posts. Only when it fits its receive
  // region; otherwise the matrix check below raises on every rank.
  const bool selfDone = out[rank_].sendBytes == out[rank_].recvBytes;
  if (selfDone) copyToSelf(parity);
  try {
    for (int32_t step = 1; step < size_; ++step) {
      const int32_t p = (rank_ + step) % size_;
      SlotHead& peer = slot(p);
      waitReached(peer.postSeq, peer.postWaiters, seq, WaitTarget{kWhat, p, peer.pid.load()}, timeout, health, spin_);
    }
  } catch (const c10::Error& e) {
    brokenBy_ = e.what_without_backtrace();
    abortPeers(brokenBy_);
    throw;
  }
  // Every rank checks the same posted matrix, so on a mismatch all raise together and stay in step.
  checkPostedMatrix(parity, kWhat);
  planSplit(parity);

  std::string copyError;
  moveData(parity, selfDone, copyError);
  try {
    publish(slot(rank_).doneSeq, slot(rank_).doneWaiters, seq);
    // Wait only for peers that touch this rank's buffers: they pull from our send buffer or push into
    // our receive buffer. Eager messages were copied with the post and need nobody.
    for (int32_t step = 1; step < size_; ++step) {
      const int32_t p = (rank_ + step) % size_;
      if (!touchesMyBuffers(parity, p)) continue;
      SlotHead& peer = slot(p);
      waitReached(peer.doneSeq, peer.doneWaiters, seq, WaitTarget{kWhat, p, peer.pid.load()}, timeout, health, spin_);
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
