// The "shm" backend: CPU ranks on one host, one shared control segment per communicator.
//
// Per call each rank posts, in its own slot, where its send regions and receive regions live. Small
// messages (<= ATB_OPS_SHM_EAGER bytes) are copied into the slot's eager buffer with the post, so the
// receiver copies them out of shared memory with no system call and nobody waits for the read.
// Larger messages move once, straight between the ranks' buffers with process_vm_readv (the receiver
// pulls) and, when receivers are busier than senders, process_vm_writev (the sender pushes the tail
// of its message while the receiver pulls the head): both cores work. Ranks whose buffers a peer
// touched then wait for that peer's "done", so buffers outlive every access to them.
//
// Posts and eager buffers alternate between two copies by call parity: a rank can be at most one
// call ahead of any peer (it waits for every peer's post of the next call), so the copy it
// overwrites was read two calls ago.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <chrono>

#include "comm/communicator.h"
#include "comm/shm/arena.h"
#include "comm/shm/shm_segment.h"

namespace atb_ops::shm {

struct SegmentHeader;
struct SlotHead;
struct PostBlock;
struct PeerEntry;

class ShmCommunicator final : public Communicator {
 public:
  explicit ShmCommunicator(const CommConfig& config);

  const std::string& backend() const override { return backend_; }
  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }

  void alltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) override;
  void barrier() override;
  // In the shared-memory arena when every rank mapped every peer's arena and it is worth it (>= 64 KiB).
  at::Tensor emptyOutput(c10::IntArrayRef sizes, const at::TensorOptions& options) override;

 private:
  // How one message src -> dst moves (every rank derives the same answer from the posted matrix).
  enum class Route : uint8_t {
    kNone,       // empty, or to itself
    kEager,      // copied into src's eager buffer with the post; dst copies it out
    kPullCopy,   // src's send region is in src's arena: dst memcpys out of it
    kPushCopy,   // else, dst's receive region is in dst's arena: src memcpys into it
    kCrossCopy,  // process_vm_readv by dst (and process_vm_writev of a tail by src, see planSplit)
  };
  void attach(const CommConfig& config);
  // Maps every peer's arena; all ranks then agree whether the arena routes are on.
  void mapPeerArenas(const CommConfig& config, const std::string& jobKey,
                     std::chrono::steady_clock::time_point deadline);
  void setGeometry(size_t eagerBytes);
  SlotHead& slot(int32_t r) const;
  PostBlock& post(int32_t r, uint32_t parity) const;
  PeerEntry* entries(int32_t r, uint32_t parity) const;
  char* eagerBuffer(int32_t r, uint32_t parity) const;
  // Checks the whole posted count matrix; every rank sees the same matrix and raises the same error.
  void checkPostedMatrix(uint32_t parity, const char* what) const;
  // Fills push_: how many tail bytes of each large message its sender writes itself. Every rank
  // computes the same plan from the same posted matrix.
  void planSplit(uint32_t parity);
  Route route(uint32_t parity, int32_t src, int32_t dst) const;
  // Bytes of message src -> dst that go through process_vm_readv/writev.
  uint64_t directBytes(uint32_t parity, int32_t src, int32_t dst) const;
  bool inArena(int32_t owner, uint64_t addr, uint64_t bytes) const;
  // Where `owner`'s arena address `addr` is mapped in this process.
  char* arenaPtr(int32_t owner, uint64_t addr) const;
  // Whether peer p reads this rank's send buffer or writes its receive buffer during this call.
  bool touchesMyBuffers(uint32_t parity, int32_t p) const;
  void copyToSelf(uint32_t parity) const;
  // Self copy (unless done), eager copies, pulls and pushes; the first failure is left in `error`.
  void moveData(uint32_t parity, bool selfDone, std::string& error) const;
  // Publishes this rank's reason for giving up, once per communicator (the first rank to fail wins).
  void abortPeers(const std::string& reason);
  // Raises when a peer process is gone or a peer gave up; runs while waits sleep.
  void checkHealth(const char* what) const;

  std::string backend_ = "shm";
  int32_t rank_;
  int32_t size_;
  size_t postStride_ = 0;
  size_t eagerBytes_ = 0;  // eager buffer per rank and parity
  size_t slotStride_ = 0;
  int64_t eagerLimit_ = 0;  // this rank's largest eager message
  bool split_ = true;
  bool spin_ = true;  // false when ranks outnumber the CPUs they may use together: waiting yields
  uint32_t seq_ = 0;
  std::vector<uint64_t> push_;  // [src * size + dst]
  std::vector<double> load_;
  bool arenaOk_ = false;                     // every rank mapped every peer's arena
  std::vector<PeerArenaMapping> peerArena_;  // [rank]; empty for this process's own arena
  std::vector<char*> peerBase_;              // [rank] where that rank's arena is mapped here
  std::string brokenBy_;                     // first fault that left peers out of step; later calls fail fast with it
  MappedSegment segment_;
};

}  // namespace atb_ops::shm
