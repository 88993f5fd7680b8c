#include "comm/shm/shm_communicator.h"

#include <ATen/ops/empty.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>

#include "comm/backend_registry.h"
#include "comm/shm/arena.h"
#include "comm/shm/peer_wait.h"
#include "core/process.h"
#include "core/reduce.h"
#include "core/status.h"

namespace atb_ops::shm {
namespace {

constexpr int64_t kArenaOutputMin = int64_t{64} << 10;
// From Arena::kReturnPagesFrom an arena block gives its pages back when freed, so a fresh output would fault
// in again page by page every call, in 4 KiB shared-memory pages; an ordinary tensor advised onto huge pages
// faults 512x less (the quantised all-reduce of 64 MiB, whose 32 MiB result is fresh every call: 43 -> 23-35 ms).
constexpr int64_t kArenaOutputMax = static_cast<int64_t>(Arena::kReturnPagesFrom);
constexpr int32_t kPrefetchMaxRanks = 16;
// How long a failed copy looks for a peer that is exiting before it is reported as a plain copy failure.
constexpr auto kDeathSettles = std::chrono::milliseconds(100);
// Reductions this large write their results with non-temporal stores: they cannot stay in the caches anyway
// (2 ranks: 64 MiB allreduce 12.1 -> 8.9 ms in a C model of the pipeline; 1 MiB got slower).
constexpr int64_t kStreamingMinBytes = int64_t{8} << 20;
// Outputs this large (all-to-all, all-gather, broadcast) are written around the caches by every memcpy into
// them (the self copy, reads and writes through arena mappings): a plain store first reads each line, and
// the output no longer fits anyway. 2 ranks pinned, AllToAllVV2 on reused tensors, per call, plain ->
// non-temporal: 16 MiB 1.40-2.46 -> 1.20-1.99 ms, 64 MiB 9.2-11.4 -> 7.3-9.1 ms; 8 MiB even, 4 MiB slower.
constexpr uint64_t kStreamingOutputMinBytes = uint64_t{16} << 20;
// Reductions copy their whole input through the eager buffers only up to this (or ATB_OPS_SHM_EAGER when
// smaller): beyond it the pipeline, which moves each rank's 1/n, is faster (2 ranks, best of 5: 16 KiB
// 10.9 -> 10.7 us, 64 KiB 20.7 -> 17.1 us; 4 KiB 8.5 -> 8.9 us).
constexpr int64_t kReduceEagerMaxBytes = int64_t{16} << 10;

size_t roundUp(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}

std::string dtypeName(int32_t dtype) {
  return c10::toString(static_cast<c10::ScalarType>(dtype));
}

// The shard of an allreduce that rank j reduces: [begin, end) elements.
std::pair<int64_t, int64_t> shardOf(int64_t numel, int32_t n, int32_t j) {
  const int64_t chunk = (numel + n - 1) / n;
  const int64_t begin = std::min(numel, chunk * j);
  return {begin, std::min(numel, begin + chunk)};
}

}  // namespace

ShmCommunicator::ShmCommunicator(const CommConfig& config)
    : Communicator("shm", config.rank, config.rankSize, config.options) {
  ATB_CHECK(config.handle == 0, ERROR_INVALID_PARAM, "backend 'shm' takes no hcclComm handle, got ", config.handle);
  att_ = attachSegment(config, memory_, &stats_);
  eagerLimit_ = att_.view.header().eagerLimit;
  split_ = att_.view.header().split != 0;
  const size_t n = static_cast<size_t>(size());
  push_.assign(n * n, 0);
  plan_.n = size();
  plan_.direct.assign(n * n, 0);
  plan_.eager.assign(n * n, 0);
  plan_.self.assign(n, 0);
  plan_.pullMemcpy.assign(n * n, 0);
  plan_.pushMemcpy.assign(n * n, 0);
  // Pushing writes into the receiver's buffers, which needs process_vm_writev outside the arena.
  plan_.split = split_ && att_.crossMemory;
  sent_.assign(n, 0);
  received_.assign(n, 0);
  p2pStaged_.resize(n * kP2pSlots);
  stats_.crossMemory.store(att_.crossMemory ? 1 : 0);
  stats_.spins.store(att_.spin ? 1 : 0);
}

ShmCommunicator::~ShmCommunicator() {
  // Peers waiting on this rank learn it left (a peer that gave up told them why first: checkHealth reads that
  // before a release). A process on its way out does not say so: it will not follow them into a new
  // communicator, and its peers must hear of its death (checkHealth sees its pid gone).
  if (!processExiting()) att_.view.slot(rank()).released.store(1, std::memory_order_release);
}

uint64_t ShmCommunicator::reachable(const void* data, uint64_t bytes, at::Tensor& keep) {
  if (att_.crossMemory || bytes == 0 || Arena::instance().contains(data, bytes)) {
    return reinterpret_cast<uint64_t>(data);
  }
  keep = emptyShared({static_cast<int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte));
  ATB_CHECK(Arena::instance().contains(keep.data_ptr(), bytes), ERROR_RT_FAIL,
            "shm: the ranks cannot read each "
            "other's memory here (ptrace is restricted), so messages go through the shared-memory arena, which has no "
            "room for ",
            bytes, " more bytes (", Arena::instance().usedBytes(), " of ", Arena::instance().bytes(),
            " in use; ATB_OPS_SHM_ARENA sets its size)");
  std::memcpy(keep.data_ptr(), data, bytes);
  stats_.stagedBytes.fetch_add(bytes, std::memory_order_relaxed);
  return reinterpret_cast<uint64_t>(keep.data_ptr());
}

at::Tensor ShmCommunicator::emptyOutput(c10::IntArrayRef sizes, const at::TensorOptions& options) {
  // Outputs in the arena let senders write them with memcpy; tiny ones go eager anyway.
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(c10::typeMetaToScalarType(options.dtype())));
  if (att_.arenasShared && size() > 1 && options.device().is_cpu() && bytes >= kArenaOutputMin &&
      bytes < kArenaOutputMax) {
    return emptyShared(sizes, options);
  }
  return Communicator::emptyOutput(sizes, options);
}

// --- the call protocol ---

ShmCommunicator::Call ShmCommunicator::begin(const char* what) {
  if (att_.view.header().abortedBy.load(std::memory_order_acquire) != 0) checkHealth(what);
  const uint32_t seq = ++seq_;
  Call c{what, seq, seq & 1u};
  PostBlock& p = myPost(c);
  p.sig = signature();
  p.eager = 0;
  return c;
}

void ShmCommunicator::announce(const Call& c, Word word, Word waiters) {
  SlotHead& s = att_.view.slot(rank());
  publish(s.*word, s.*waiters, c.seq);
}

template <typename Wanted>
void ShmCommunicator::awaitPeers(const Call& c, Word word, Word waiters, Wanted wanted) {
  const HealthCheck health = [this, &c](int32_t peer) { checkHealth(c.what, peer); };
  try {
    for (int32_t step = 1; step < size(); ++step) {
      const int32_t p = (rank() + step) % size();
      if (!wanted(p)) continue;
      SlotHead& peer = att_.view.slot(p);
      waitReached(peer.*word, peer.*waiters, c.seq, WaitTarget{c.what, p, memory_.pid(p)}, options().timeout, health,
                  att_.spin);
    }
  } catch (const c10::Error& e) {
    giveUp(e);
    throw;
  }
}

void ShmCommunicator::awaitPosts(const Call& c) {
  awaitAll(c, &SlotHead::postSeq, &SlotHead::postWaiters);
  // The posts were written on other cores: reading them field by field costs one cross-core miss after
  // another (the signature, then the entries); asking for every line at once overlaps those misses. Up to 16
  // ranks, where a post's entries are a few lines.
  if (size() > kPrefetchMaxRanks) return;
  const size_t entryBytes = sizeof(PeerEntry) * static_cast<size_t>(size());
  for (int32_t p = 0; p < size(); ++p) {
    if (p == rank()) continue;
    const char* line = reinterpret_cast<const char*>(&att_.view.post(p, c.parity));
    const char* end = reinterpret_cast<const char*>(att_.view.entries(p, c.parity)) + entryBytes;
    for (; line < end; line += 64) __builtin_prefetch(line);
  }
}

void ShmCommunicator::checkSameCall(const Call& c) const {
  // Byte-equal posts are the common case: no message is made for them.
  const CallSignature& first = att_.view.post(0, c.parity).sig;
  bool same = true;
  for (int32_t r = 1; r < size() && same; ++r) {
    same = std::memcmp(&first, &att_.view.post(r, c.parity).sig, sizeof(CallSignature)) == 0;
  }
  if (same) return;
  // The same prefix on every rank, whatever each called, so all raise one message.
  checkSignatures(
      size(), [&](int32_t r) -> const CallSignature& { return att_.view.post(r, c.parity).sig; },
      "shm call #" + std::to_string(myPost(c).sig.seq));
}

void ShmCommunicator::checkCountMatrix(const Call& c) const {
  const int64_t es = std::max<int64_t>(myPost(c).sig.elemSize, 1);  // a barrier moves no typed data
  atb_ops::checkCountMatrix(
      size(), [&](int32_t i, int32_t j) { return static_cast<int64_t>(att_.view.entries(i, c.parity)[j].sendBytes); },
      [&](int32_t j, int32_t i) { return static_cast<int64_t>(att_.view.entries(j, c.parity)[i].recvBytes); }, c.what,
      es);
}

bool ShmCommunicator::allEager(const Call& c) const {
  for (int32_t i = 0; i < size(); ++i) {
    if (att_.view.post(i, c.parity).eager == 0) return false;
  }
  return true;
}

void ShmCommunicator::giveUp(const c10::Error& e) {
  // A peer that left is no reason to abort: every rank finds it for itself, and operations move to a fresh
  // communicator, which an abort recorded here would make look like a death.
  const auto* status = dynamic_cast<const StatusError*>(&e);
  if (status != nullptr && status->status() == Status::ERROR_COMM_PEER_LEFT) return;
  abortPeers(e.what_without_backtrace());
}

void ShmCommunicator::abortPeers(const std::string& reason) {
  SegmentHeader& h = att_.view.header();
  int32_t unclaimed = 0;
  if (!h.abortClaim.compare_exchange_strong(unclaimed, rank() + 1)) return;  // someone said it first
  std::strncpy(h.abortReason, reason.c_str(), sizeof(h.abortReason) - 1);
  h.abortedBy.store(rank() + 1, std::memory_order_release);
}

bool ShmCommunicator::abandonedByPeer() const {
  const int32_t by = att_.view.header().abortedBy.load(std::memory_order_acquire);
  return by != 0 && by != rank() + 1;
}

void ShmCommunicator::failCall(const Call& c, const std::string& error) {
  // A copy from a peer that is exiting fails (ESRCH) a moment before the peer shows as gone: its death (or a
  // peer's giving up) is reported by the same check every wait runs, naming it.
  const auto settled = std::chrono::steady_clock::now() + kDeathSettles;
  try {
    while (true) {
      // A peer that released meanwhile had done its part of this call: it is not what failed the copy.
      checkHealth(c.what, -1, false);
      if (std::chrono::steady_clock::now() >= settled) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  } catch (const c10::Error& e) {
    // The peers that wait on this rank, not on the dead one, learn of the death only from it.
    giveUp(e);
    throw;
  }
  abortPeers(std::string(c.what) + ": " + error);
  ATB_FAIL(ERROR_RT_FAIL, c.what, ": ", error);
}

void ShmCommunicator::checkHealth(const char* what, int32_t waitedOn, bool leaving) const {
  const SegmentHeader& h = att_.view.header();
  const int32_t by = h.abortedBy.load(std::memory_order_acquire);
  ATB_CHECK(by == 0, ERROR_COMM_PEER_DIED, what, ": rank ", by - 1, " gave up on this communicator: ",
            std::string(h.abortReason, strnlen(h.abortReason, sizeof(h.abortReason))));
  // Only the awaited peer: another may have done its part of this call and gone (exited, or released its
  // operation) while this rank still waits on a slower one. A peer stuck behind one that went finds it
  // itself, and a death it finds is passed on to every rank (abortPeers).
  const auto watched = [&](int32_t p) { return p != rank() && (waitedOn < 0 || p == waitedOn); };
  for (int32_t p = 0; p < size(); ++p) {
    const pid_t pid = memory_.pid(p);
    ATB_CHECK(!watched(p) || processAlive(pid), ERROR_COMM_PEER_DIED, what, ": rank ", p, " (pid ", pid,
              ") exited while this rank waited on the collective");
  }
  // Only then a peer that left: a death elsewhere is what made it leave.
  for (int32_t p = 0; p < size() && leaving; ++p) {
    ATB_CHECK(!watched(p) || att_.view.slot(p).released.load(std::memory_order_acquire) == 0, ERROR_COMM_PEER_LEFT,
              what, ": rank ", p, " (pid ", memory_.pid(p),
              ") released this communicator (its last operation or "
              "group was destroyed) while this rank waited on it; ranks whose operations were re-made at different "
              "times meet in a new communicator");
  }
}

// --- alltoallv ---

uint64_t ShmCommunicator::directBytes(const Call& c, int32_t src, int32_t dst) const {
  const PeerEntry& e = att_.view.entries(src, c.parity)[dst];
  return (src == dst || e.eagerOffset != kNotEager) ? 0 : e.sendBytes;
}

void ShmCommunicator::planMoves(const Call& c) {
  const int32_t n = size();
  for (int32_t src = 0; src < n; ++src) {
    const PeerEntry* out = att_.view.entries(src, c.parity);
    plan_.self[src] = out[src].sendBytes;
    for (int32_t dst = 0; dst < n; ++dst) {
      const size_t k = static_cast<size_t>(src) * n + dst;
      const uint64_t direct = directBytes(c, src, dst);
      plan_.direct[k] = direct;
      plan_.eager[k] = (src != dst && direct == 0) ? out[dst].sendBytes : 0;
      if (direct > 0) {
        const PeerEntry& theirs = att_.view.entries(dst, c.parity)[src];
        plan_.pullMemcpy[k] = att_.arenasShared && memory_.inArena(src, out[dst].sendAddr, direct);
        plan_.pushMemcpy[k] = att_.arenasShared && memory_.inArena(dst, theirs.recvAddr, direct);
      } else {
        plan_.pullMemcpy[k] = 0;
        plan_.pushMemcpy[k] = 0;
      }
    }
  }
  planSplit(plan_, push_);
}

void ShmCommunicator::copyToSelf(const Call& c, bool streaming) const {
  const PeerEntry& self = myEntries(c)[rank()];
  if (self.sendBytes > 0) {
    memory_.copyLocal(reinterpret_cast<void*>(self.recvAddr), reinterpret_cast<const void*>(self.sendAddr),
                      self.sendBytes, streaming);
  }
}

void ShmCommunicator::moveData(const Call& c, bool selfDone, bool streaming, std::string& error) const {
  const PeerEntry* mine = myEntries(c);
  if (!selfDone) copyToSelf(c, streaming);
  for (int32_t step = 1; step < size() && error.empty(); ++step) {
    // Rotating the start spreads the readers over the senders instead of all hitting rank 0 first.
    const int32_t src = (rank() + step) % size();
    const PeerEntry& in = att_.view.entries(src, c.parity)[rank()];
    char* dst = reinterpret_cast<char*>(mine[src].recvAddr);
    if (in.sendBytes > 0 && in.eagerOffset != kNotEager) {
      std::memcpy(dst, att_.view.eager(src, c.parity) + in.eagerOffset, in.sendBytes);
    } else if (const uint64_t head = directBytes(c, src, rank()) - pushed(src, rank()); head > 0) {
      if (!memory_.read(src, in.sendAddr, dst, head, error, streaming)) return;
    }
    // Our pushes go the other way round the ring, so a receiver gets its pull and the push at once.
    const int32_t to = (rank() - step + size()) % size();
    if (const uint64_t tail = pushed(rank(), to); tail > 0) {
      const uint64_t offset = mine[to].sendBytes - tail;
      const char* local = reinterpret_cast<const char*>(mine[to].sendAddr) + offset;
      const uint64_t remote = att_.view.entries(to, c.parity)[rank()].recvAddr + offset;
      if (!memory_.write(to, local, remote, tail, error, streaming)) return;
    }
  }
}

bool ShmCommunicator::touchesMyBuffers(const Call& c, int32_t p) const {
  const bool pullsMine = directBytes(c, rank(), p) > pushed(rank(), p);  // p reads our send buffer
  const bool pushesMine = pushed(p, rank()) > 0;                         // p writes our receive buffer
  return pullsMine || pushesMine;
}

void ShmCommunicator::noteReuse(const at::Tensor& t) {
  const size_t bytes = t.nbytes();
  if (size() < 2 || bytes < ReusedBufferPages::kMinBytes || !options().hugePages ||
      Arena::instance().contains(t.data_ptr(), bytes)) {
    return;
  }
  if (const uint64_t collapsed = reused_.onUse(t.data_ptr(), bytes); collapsed > 0) {
    stats_.hugePageBytes.fetch_add(collapsed, std::memory_order_relaxed);
  }
}

void ShmCommunicator::doAlltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) {
  noteReuse(send);
  noteReuse(recv);
  const Call c = begin("shm alltoallv");
  const int64_t es = send.element_size();
  // Post: addresses and sizes, small messages copied into the eager buffer of this parity.
  PeerEntry* out = myEntries(c);
  const auto* sendBase = static_cast<const char*>(send.data_ptr());
  auto* recvBase = static_cast<char*>(recv.data_ptr());
  char* eager = att_.view.eager(rank(), c.parity);
  size_t eagerUsed = 0;
  for (int32_t j = 0; j < size(); ++j) {
    PeerEntry& e = out[j];
    const char* src = sendBase + layout.sdispls[j] * es;
    const uint64_t bytes = static_cast<uint64_t>(layout.sendCounts[j] * es);
    e.sendAddr = reinterpret_cast<uint64_t>(src);
    e.recvAddr = reinterpret_cast<uint64_t>(recvBase + layout.rdispls[j] * es);
    e.sendBytes = bytes;
    e.recvBytes = static_cast<uint64_t>(layout.recvCounts[j] * es);
    e.eagerOffset = kNotEager;
    const size_t room = roundUp(bytes, kEagerAlign);
    if (j != rank() && bytes > 0 && static_cast<int64_t>(bytes) <= eagerLimit_ &&
        eagerUsed + room <= att_.view.eagerBytes()) {
      std::memcpy(eager + eagerUsed, src, bytes);
      stats_.eagerBytes.fetch_add(bytes, std::memory_order_relaxed);
      e.eagerOffset = static_cast<uint32_t>(eagerUsed);
      eagerUsed += room;
    }
  }
  at::Tensor staged;
  if (!att_.crossMemory) {
    bool peersRead = false;
    for (int32_t j = 0; j < size(); ++j)
      peersRead = peersRead || (j != rank() && out[j].sendBytes > 0 && out[j].eagerOffset == kNotEager);
    const uint64_t base = peersRead ? reachable(sendBase, send.nbytes(), staged) : reinterpret_cast<uint64_t>(sendBase);
    for (int32_t j = 0; j < size() && staged.defined(); ++j) {
      if (j != rank()) out[j].sendAddr = base + (out[j].sendAddr - reinterpret_cast<uint64_t>(sendBase));
    }
  }
  announce(c, &SlotHead::postSeq, &SlotHead::postWaiters);
  // The self copy needs no peer: it overlaps the wait for the others' posts. Only when it fits its receive
  // region; otherwise the matrix check below raises on every rank.
  const bool selfDone = out[rank()].sendBytes == out[rank()].recvBytes;
  const bool streaming = recv.nbytes() >= kStreamingOutputMinBytes;
  if (selfDone) copyToSelf(c, streaming);
  awaitPosts(c);
  // Every rank checks the same posts, so on a mismatch all raise together and stay in step.
  checkSameCall(c);
  checkCountMatrix(c);
  planMoves(c);

  std::string error;
  moveData(c, selfDone, streaming, error);
  if (!error.empty()) failCall(c, error);
  announce(c, &SlotHead::doneSeq, &SlotHead::doneWaiters);
  // Wait only for peers that touch this rank's buffers: they pull from our send buffer or push into our
  // receive buffer. Eager messages were copied with the post and need nobody.
  awaitPeers(c, &SlotHead::doneSeq, &SlotHead::doneWaiters, [&](int32_t p) { return touchesMyBuffers(c, p); });
}

// Every rank sends the same bytes (the signature says so), to everyone: one post, one eager copy or one
// address, and no count matrix, layout or plan to build.
void ShmCommunicator::doAllgather(const at::Tensor& send, at::Tensor& recv) {
  const uint64_t bytes = send.nbytes();  // recv holds size() x bytes (Communicator::allgather)
  noteReuse(send);
  noteReuse(recv);
  const Call c = begin("shm allgather");
  PeerEntry& me = myEntries(c)[rank()];
  const bool eager = size() > 1 && static_cast<int64_t>(bytes) <= eagerLimit_ && bytes <= att_.view.eagerBytes();
  at::Tensor staged;
  me.sendAddr = eager ? reinterpret_cast<uint64_t>(send.data_ptr()) : reachable(send.data_ptr(), bytes, staged);
  me.sendBytes = bytes;
  if (eager && bytes > 0) {
    std::memcpy(att_.view.eager(rank(), c.parity), send.data_ptr(), bytes);
    stats_.eagerBytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  myPost(c).eager = eager ? 1 : 0;
  announce(c, &SlotHead::postSeq, &SlotHead::postWaiters);
  auto* out = static_cast<char*>(recv.data_ptr());
  const bool streaming = recv.nbytes() >= kStreamingOutputMinBytes;
  // The self copy needs no peer: it overlaps the wait for the others' posts.
  if (bytes > 0) memory_.copyLocal(out + rank() * bytes, send.data_ptr(), bytes, streaming);
  awaitPosts(c);
  checkSameCall(c);
  if (bytes == 0) return;
  std::string error;
  for (int32_t step = 1; step < size() && error.empty(); ++step) {
    const int32_t src = (rank() + step) % size();
    char* dst = out + src * bytes;
    if (att_.view.post(src, c.parity).eager != 0) {
      std::memcpy(dst, att_.view.eager(src, c.parity), bytes);
    } else {
      memory_.read(src, att_.view.entries(src, c.parity)[src].sendAddr, dst, bytes, error, streaming);
    }
  }
  if (!error.empty()) failCall(c, error);
  announce(c, &SlotHead::doneSeq, &SlotHead::doneWaiters);
  // Peers read this rank's tensor only when it was not copied into the eager buffer.
  if (!eager) awaitAll(c, &SlotHead::doneSeq, &SlotHead::doneWaiters);
}

// --- reductions ---

void ShmCommunicator::doAllreduce(const at::Tensor& send, at::Tensor& recv, ReduceOp op) {
  const uint64_t bytes = send.nbytes();
  const Call c = begin("shm allreduce");
  const c10::ScalarType dtype = send.scalar_type();
  const int64_t es = send.element_size();
  const int64_t numel = send.numel();
  if (static_cast<int64_t>(bytes) <= reduceEagerLimit() && bytes <= att_.view.eagerBytes()) {
    if (bytes > 0) std::memcpy(att_.view.eager(rank(), c.parity), send.data_ptr(), bytes);
    stats_.eagerBytes.fetch_add(bytes, std::memory_order_relaxed);
    myPost(c).eager = 1;
  }
  announce(c, &SlotHead::postSeq, &SlotHead::postWaiters);
  awaitPosts(c);
  checkSameCall(c);
  if (numel == 0) return;

  if (allEager(c)) {
    // Small: everyone reduces every copy itself, in rank order; nobody waits for anybody's reads.
    std::vector<const char*> parts;
    for (int32_t p = 0; p < size(); ++p) parts.push_back(att_.view.eager(p, c.parity));
    reduceInOrder(parts.data(), parts.size(), static_cast<char*>(recv.data_ptr()), numel, dtype, op);
    return;
  }

  // Large: pipelined through the segment (reduce_pipeline.h); peers never touch our tensors.
  PipeShards shards{dtype, op};
  auto* in = static_cast<const char*>(send.data_ptr());
  auto* out = static_cast<char*>(recv.data_ptr());
  for (int32_t j = 0; j < size(); ++j) {
    const auto [b, e] = shardOf(numel, size(), j);
    shards.input.push_back(in + b * es);
    shards.count.push_back(e - b);
    shards.gatherTo.push_back(out + b * es);
  }
  shards.result = shards.gatherTo[rank()];
  shards.streaming = static_cast<int64_t>(bytes) >= kStreamingMinBytes;
  runPipeline(c, shards);
}

void ShmCommunicator::doReduceScatterV(const at::Tensor& send, const VLayout& s, at::Tensor& recv, ReduceOp op) {
  const int64_t es = send.element_size();
  const Call c = begin("shm reduce_scatter");
  const c10::ScalarType dtype = send.scalar_type();
  PeerEntry* out = myEntries(c);
  const auto* base = static_cast<const char*>(send.data_ptr());
  uint64_t total = 0;
  for (int32_t j = 0; j < size(); ++j) total += roundUp(static_cast<size_t>(s.counts[j] * es), kEagerAlign);
  const bool eager = static_cast<int64_t>(send.nbytes()) <= reduceEagerLimit() && total <= att_.view.eagerBytes();
  size_t used = 0;
  for (int32_t j = 0; j < size(); ++j) {
    PeerEntry& e = out[j];
    e.sendAddr = reinterpret_cast<uint64_t>(base + s.displs[j] * es);
    e.sendBytes = static_cast<uint64_t>(s.counts[j] * es);
    e.eagerOffset = kNotEager;
    if (eager) {
      std::memcpy(att_.view.eager(rank(), c.parity) + used, base + s.displs[j] * es, e.sendBytes);
      stats_.eagerBytes.fetch_add(e.sendBytes, std::memory_order_relaxed);
      e.eagerOffset = static_cast<uint32_t>(used);
      used += roundUp(e.sendBytes, kEagerAlign);
    }
  }
  myPost(c).eager = eager ? 1 : 0;
  announce(c, &SlotHead::postSeq, &SlotHead::postWaiters);
  awaitPosts(c);
  checkSameCall(c);
  const int64_t m = s.counts[rank()];
  if (allEager(c)) {
    if (m == 0) return;
    std::vector<const char*> parts(size());
    for (int32_t p = 0; p < size(); ++p) {
      const PeerEntry& theirs = att_.view.entries(p, c.parity)[rank()];
      parts[p] = p == rank() ? reinterpret_cast<const char*>(theirs.sendAddr)
                             : att_.view.eager(p, c.parity) + theirs.eagerOffset;
    }
    reduceInOrder(parts.data(), parts.size(), static_cast<char*>(recv.data_ptr()), m, dtype, op);
    return;
  }
  PipeShards shards{dtype, op};
  for (int32_t j = 0; j < size(); ++j) {
    shards.input.push_back(base + s.displs[j] * es);
    shards.count.push_back(s.counts[j]);
  }
  shards.result = static_cast<char*>(recv.data_ptr());
  runPipeline(c, shards);
}

int64_t ShmCommunicator::reduceEagerLimit() const {
  return std::min(eagerLimit_, kReduceEagerMaxBytes);
}

void ShmCommunicator::runPipeline(const Call& c, const PipeShards& shards) {
  stats_.pipelineCalls.fetch_add(1, std::memory_order_relaxed);
  IdleWait idle(c.what, options().timeout, [this, &c](int32_t peer) { checkHealth(c.what, peer); }, att_.spin);
  try {
    runReducePipeline(att_.view, memory_, rank(), c.parity, shards, idle);
  } catch (const c10::Error& e) {
    giveUp(e);
    throw;
  }
}

// --- broadcast ---

void ShmCommunicator::doBroadcast(at::Tensor& tensor, int32_t root) {
  const uint64_t bytes = tensor.nbytes();
  noteReuse(tensor);
  const Call c = begin("shm broadcast");
  PeerEntry& me = myEntries(c)[rank()];
  me.sendAddr = reinterpret_cast<uint64_t>(tensor.data_ptr());
  me.recvAddr = me.sendAddr;
  at::Tensor staged;
  if (rank() == root && static_cast<int64_t>(bytes) <= eagerLimit_ && bytes <= att_.view.eagerBytes()) {
    if (bytes > 0) std::memcpy(att_.view.eager(rank(), c.parity), tensor.data_ptr(), bytes);
    stats_.eagerBytes.fetch_add(bytes, std::memory_order_relaxed);
    myPost(c).eager = 1;
  } else if (rank() == root) {
    me.sendAddr = reachable(tensor.data_ptr(), bytes, staged);
  }
  announce(c, &SlotHead::postSeq, &SlotHead::postWaiters);
  awaitPosts(c);
  checkSameCall(c);
  const bool eager = att_.view.post(root, c.parity).eager != 0;
  if (rank() != root && bytes > 0) {
    if (eager) {
      std::memcpy(tensor.data_ptr(), att_.view.eager(root, c.parity), bytes);
    } else {
      std::string error;
      const uint64_t remote = att_.view.entries(root, c.parity)[root].sendAddr;
      if (!memory_.read(root, remote, tensor.data_ptr(), bytes, error, bytes >= kStreamingOutputMinBytes)) {
        failCall(c, error);
      }
    }
  }
  if (eager || bytes == 0) return;
  announce(c, &SlotHead::doneSeq, &SlotHead::doneWaiters);
  if (rank() == root) awaitAll(c, &SlotHead::doneSeq, &SlotHead::doneWaiters);
}

// --- point to point ---

void ShmCommunicator::waitWord(std::atomic<uint32_t>& word, std::atomic<uint32_t>& waiters, uint32_t target,
                               const char* what, int32_t peer) {
  const HealthCheck health = [this, what](int32_t peer) { checkHealth(what, peer); };
  try {
    waitReached(word, waiters, target, WaitTarget{what, peer, memory_.pid(peer)}, options().timeout, health, att_.spin);
  } catch (const c10::Error& e) {
    giveUp(e);
    throw;
  }
}

uint32_t ShmCommunicator::postSend(const at::Tensor& t, int32_t peer, int32_t tag) {
  noteReuse(t);
  P2pChannel& ch = att_.view.channel(rank(), peer);
  const uint32_t seq = ++sent_[peer];
  // The slot this message takes was last used kP2pSlots messages ago: that one must have been taken.
  if (seq > kP2pSlots) waitWord(ch.ackSeq, ch.ackWaiters, seq - kP2pSlots, "shm send (waiting for a free slot)", peer);
  P2pSlot& slot = ch.slots[seq % kP2pSlots];
  // The message that last used this slot was taken (waited for above): its staged copy can go.
  slot.addr = reachable(t.data_ptr(), t.nbytes(), p2pStaged_[static_cast<size_t>(peer) * kP2pSlots + seq % kP2pSlots]);
  slot.bytes = t.nbytes();
  slot.dtype = static_cast<int32_t>(t.scalar_type());
  slot.tag = tag;
  slot.status = static_cast<int32_t>(P2pStatus::kDelivered);
  publish(ch.sendSeq, ch.sendWaiters, seq);
  return seq;
}

void ShmCommunicator::takeMessage(at::Tensor& t, int32_t peer, int32_t tag) {
  static constexpr const char* kWhat = "shm recv";
  noteReuse(t);
  P2pChannel& ch = att_.view.channel(peer, rank());
  const uint32_t seq = ++received_[peer];
  waitWord(ch.sendSeq, ch.sendWaiters, seq, "shm recv (waiting for the matching send)", peer);
  P2pSlot& slot = ch.slots[seq % kP2pSlots];
  const uint64_t bytes = t.nbytes();
  const int32_t dtype = static_cast<int32_t>(t.scalar_type());
  if (slot.bytes != bytes || slot.dtype != dtype || slot.tag != tag) {
    const uint64_t sentBytes = slot.bytes;
    const int32_t sentDtype = slot.dtype;
    const int32_t sentTag = slot.tag;
    slot.expectedBytes = bytes;
    slot.expectedDtype = dtype;
    slot.tag = tag;  // the sender reads the receiver's tag back from here
    slot.status = static_cast<int32_t>(P2pStatus::kMismatch);
    publish(ch.ackSeq, ch.ackWaiters, seq);
    ATB_CHECK(sentBytes != bytes || sentDtype != dtype, ERROR_INVALID_PARAM, kWhat, ": rank ", rank(), " takes tag ",
              tag, " from rank ", peer, ", which sent tag ", sentTag, kTagsInOrder);
    ATB_FAIL(ERROR_INVALID_PARAM, kWhat, ": rank ", rank(), " expected ", t.numel(), " elements of ", t.scalar_type(),
             " from rank ", peer, ", which sent ",
             sentBytes / std::max<int64_t>(1, c10::elementSize(static_cast<c10::ScalarType>(sentDtype))),
             " elements of ", dtypeName(sentDtype));
  }
  std::string error;
  const bool ok = memory_.read(peer, slot.addr, t.data_ptr(), bytes, error);
  slot.status = static_cast<int32_t>(ok ? P2pStatus::kDelivered : P2pStatus::kCopyFailed);
  publish(ch.ackSeq, ch.ackWaiters, seq);
  ATB_CHECK(ok, ERROR_RT_FAIL, kWhat, ": ", error);
}

void ShmCommunicator::awaitAck(const at::Tensor& t, int32_t peer, uint32_t seq, int32_t tag) {
  static constexpr const char* kWhat = "shm send";
  P2pChannel& ch = att_.view.channel(rank(), peer);
  // Synchronous, like HCCL's and NCCL's send: the buffer is read in place, so wait for the receiver.
  waitWord(ch.ackSeq, ch.ackWaiters, seq, "shm send (waiting for the matching recv)", peer);
  const P2pSlot& slot = ch.slots[seq % kP2pSlots];
  const auto status = static_cast<P2pStatus>(slot.status);
  const bool sameSize = slot.expectedBytes == t.nbytes() && slot.expectedDtype == static_cast<int32_t>(t.scalar_type());
  ATB_CHECK(status != P2pStatus::kMismatch || !sameSize, ERROR_INVALID_PARAM, kWhat, ": rank ", rank(), " sent tag ",
            tag, " to rank ", peer, ", whose receive takes tag ", slot.tag, kTagsInOrder);
  ATB_CHECK(
      status != P2pStatus::kMismatch, ERROR_INVALID_PARAM, kWhat, ": rank ", rank(), " sent ", t.numel(),
      " elements of ", t.scalar_type(), " to rank ", peer, ", which expected ",
      slot.expectedBytes / std::max<int64_t>(1, c10::elementSize(static_cast<c10::ScalarType>(slot.expectedDtype))),
      " elements of ", dtypeName(slot.expectedDtype));
  ATB_CHECK(status == P2pStatus::kDelivered, ERROR_RT_FAIL, kWhat, ": rank ", peer, " could not read the message");
}

void ShmCommunicator::doSend(const at::Tensor& tensor, int32_t peer, int32_t tag) {
  awaitAck(tensor, peer, postSend(tensor, peer, tag), tag);
}

void ShmCommunicator::doRecv(at::Tensor& tensor, int32_t peer, int32_t tag) {
  takeMessage(tensor, peer, tag);
}

void ShmCommunicator::doSendRecv(std::vector<P2pOp>& ops) {
  // Every send is posted first, so no rank waits on a receive its peer has not reached.
  std::vector<uint32_t> seqs(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].isSend) seqs[i] = postSend(ops[i].tensor, ops[i].peer, ops[i].tag);
  }
  std::exception_ptr first;
  for (P2pOp& op : ops) {
    if (op.isSend) continue;
    try {
      takeMessage(op.tensor, op.peer, op.tag);
    } catch (const StatusError& e) {
      if (isCommunicatorFault(e.status())) throw;
      if (!first) first = std::current_exception();  // a mismatch: finish the batch, so peers stay in step
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].isSend) continue;
    try {
      awaitAck(ops[i].tensor, ops[i].peer, seqs[i], ops[i].tag);
    } catch (const StatusError& e) {
      if (isCommunicatorFault(e.status())) throw;
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

namespace {
const bool registered = [] {
  registerBackend("shm", c10::DeviceType::CPU,
                  [](const CommConfig& c) { return std::make_shared<ShmCommunicator>(c); });
  return true;
}();
}  // namespace

}  // namespace atb_ops::shm
