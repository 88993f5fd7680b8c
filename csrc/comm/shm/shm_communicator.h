// The "shm" backend: CPU ranks on one host, one shared control segment per communicator.
//
// Per call each rank posts, in its own slot, where its send regions and receive regions live. Small
// messages (<= ATB_OPS_SHM_EAGER bytes) are copied into the slot's eager buffer with the post, so the
// receiver copies them out of shared memory with no system call and nobody waits for the read.
// Larger messages move once, straight between the ranks' buffers: the receiver reads a head and the
// sender writes a tail (planSplit balances the two when some ranks are busier than others), each with
// a memcpy through the peer's mapping when that buffer is in the peer's shared-memory arena (arena.h),
// else with process_vm_readv / process_vm_writev. Ranks whose buffers a peer touched then wait for
// that peer's "done", so buffers outlive every access to them.
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
  // Fills push_: how many tail bytes of each direct message its sender writes (the receiver reads the
  // head). Every rank computes the same plan from the same posted matrix.
  void planSplit(uint32_t parity);
  uint64_t pushed(int32_t src, int32_t dst) const { return push_[static_cast<size_t>(src) * size_ + dst]; }
  // Bytes of message src -> dst that move directly between the buffers (not eager, not to itself).
  uint64_t directBytes(uint32_t parity, int32_t src, int32_t dst) const;
  // Whether the receiver's head / the sender's tail of src -> dst is a memcpy through the peer's arena
  // mapping (else process_vm_readv / process_vm_writev).
  bool pullByMemcpy(uint32_t parity, int32_t src, int32_t dst) const;
  bool pushByMemcpy(uint32_t parity, int32_t src, int32_t dst) const;
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
