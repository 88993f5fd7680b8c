// The shm backend's control segment: what lives where, shared by every rank of one communicator.
//
//   SegmentHeader
//   rankSize x Slot:    SlotHead | PostBlock+PeerEntry[rankSize] x 2 parities | eager buffer x 2 parities
//                       | pipeline counters (PipeCounter x rankSize words each)
//   rankSize^2 x P2pChannel (channel src -> dst at src * rankSize + dst)
//
// Posts and eager buffers alternate between two copies by call parity: a rank can be at most one call
// ahead of any peer (it waits for every peer's post of the next call), so the copy it overwrites was read
// two calls ago. A large reduction uses its parity's eager buffer as the rings of its pipeline
// (reduce_pipeline.h); the pipeline counters only ever grow, so they need no parity.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "comm/call_signature.h"

namespace atb_ops::shm {

constexpr uint64_t kSegmentMagic = 0x37306d6873627461ULL;  // "atbshm07"
constexpr uint32_t kNotEager = 0xffffffffu;
// Bytes of each eager buffer (per rank and parity): 512 KiB up to 4 ranks, else 256 KiB. The buffer holds a
// call's eager messages (each at most ATB_OPS_SHM_EAGER, all that fit) or the reduction pipeline's rings
// (one per rank, 4 slots each; 2 ranks: 64 KiB slots, which measured best against 16 and 32 KiB for 1-64
// MiB allreduces). Larger groups keep 256 KiB so the segment (rankSize x 2 buffers, in /dev/shm) stays as
// small as before the pipeline.
size_t eagerBufferBytes(int32_t rankSize);
constexpr size_t kEagerAlign = 64;
constexpr size_t kCpuWords = 16;  // 1024 CPUs
// Beyond this, one host would need more ranks than it has cores to be useful, and the per-pair state
// (posts, point-to-point channels) grows as rankSize^2: refused up front with a clear error.
constexpr int32_t kMaxRanks = 512;

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
  // The root's ATB_OPS_SHM_EAGER and ATB_OPS_SHM_SPLIT: they decide who moves which bytes, so every rank
  // runs with the root's values, whatever its own environment says.
  int64_t eagerLimit;
  int32_t split;
  int32_t reserved;
  uint64_t rootStartTime;  // with rootPid: a segment whose root is gone is a killed creation's (shm_attach.cpp)
  // Room for a whole error of a communicator made of several (its part's message, with the notes naming ranks and
  // hosts), so the lost host's name reaches the peers; the header stays 1 KiB.
  char abortReason[960];
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
  // process_vm_readv between the ranks: each publishes a word of its own memory, every peer reads it back at
  // creation and says whether the kernel let it (0 not yet, 1 yes, 2 refused: a ptrace-restricted host).
  uint64_t probeAddr;
  uint64_t probeValue;
  std::atomic<int32_t> crossMemory;
  // 1 once this rank's communicator object is gone (its last user released it): a peer still calling on the
  // communicator learns it at once (ERROR_COMM_PEER_LEFT) instead of waiting out the timeout.
  std::atomic<int32_t> released;
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

// A rank's post for one collective: what it calls (every rank compares all posts before moving data, so ranks
// that called different things, or the same with other sizes, all raise instead of misreading buffers).
struct alignas(64) PostBlock {
  CallSignature sig;
  int32_t eager;  // 1: the whole call travels through the eager buffers
  // PeerEntry entries[rankSize] follow
};

// Messages src may have posted to dst and not yet had acknowledged (a batch may hold several per peer).
constexpr uint32_t kP2pSlots = 8;

// One posted message: written by the sender (addr, bytes, dtype), then by the receiver (status, and what it
// expected when it refused the message).
struct P2pSlot {
  uint64_t addr;
  uint64_t bytes;
  int32_t dtype;
  int32_t status;  // P2pStatus
  uint64_t expectedBytes;
  int32_t expectedDtype;
  int32_t tag;  // the sender's (torch.distributed's tag); the receiver's must equal it
};

// Point to point, src -> dst: message #k lives in slot k % kP2pSlots. sendSeq (by src): messages posted;
// ackSeq (by dst): messages taken.
struct alignas(64) P2pChannel {
  std::atomic<uint32_t> sendSeq;
  std::atomic<uint32_t> sendWaiters;
  std::atomic<uint32_t> ackSeq;
  std::atomic<uint32_t> ackWaiters;
  P2pSlot slots[kP2pSlots];
};

enum class P2pStatus : int32_t { kDelivered = 0, kMismatch = 1, kCopyFailed = 2 };

// A reduction pipeline's progress words, rankSize of each per rank, written only by their rank and counted
// over the communicator's whole life (wrapping): chunks it copied into its ring for peer j (kStaged), chunks
// of j's ring for it that it reduced (kConsumed), chunks of j's reduced shard it copied out (kGathered);
// kReduced (word 0 only): chunks of its own shard it reduced in all-reduces (the only calls that gather).
enum class PipeCounter : int32_t { kStaged = 0, kConsumed = 1, kGathered = 2, kReduced = 3 };
constexpr int32_t kPipeCounters = 4;

// Offsets inside a segment for one rankSize and eager size.
class SegmentView {
 public:
  SegmentView() = default;
  SegmentView(void* base, int32_t rankSize, size_t eagerBytes);

  static size_t bytesFor(int32_t rankSize, size_t eagerBytes);

  SegmentHeader& header() const { return *reinterpret_cast<SegmentHeader*>(base_); }
  SlotHead& slot(int32_t r) const;
  PostBlock& post(int32_t r, uint32_t parity) const;
  PeerEntry* entries(int32_t r, uint32_t parity) const;
  char* eager(int32_t r, uint32_t parity) const;
  P2pChannel& channel(int32_t src, int32_t dst) const;
  // Rank r's counter `which` about peer j (j = 0 for kReduced).
  std::atomic<uint32_t>& counter(int32_t r, PipeCounter which, int32_t j) const;
  size_t eagerBytes() const { return eagerBytes_; }
  int32_t rankSize() const { return size_; }

 private:
  char* base_ = nullptr;
  int32_t size_ = 0;
  size_t eagerBytes_ = 0;
  size_t postStride_ = 0;
  size_t slotStride_ = 0;
};

}  // namespace atb_ops::shm
