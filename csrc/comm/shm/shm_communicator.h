// The "shm" backend: CPU ranks on one host, one shared control segment per communicator (segment_layout.h).
//
// Every collective is one call protocol: each rank posts, in its own slot, what it calls and where its
// buffers live (small payloads copied into its eager buffer with the post), waits for every peer's post,
// checks that all ranks called the same thing with matching sizes (all see the same posts, so all raise
// the same error), moves data, and finally waits only for the peers that touched its buffers.
//   alltoallv   messages <= ATB_OPS_SHM_EAGER go through the eager buffers; larger ones move once, straight
//               between the ranks' buffers, the receiver pulling a head and the sender pushing a tail
//               (split_planner.h), by memcpy through arena mappings or process_vm_readv/writev. Where the
//               kernel refuses process_vm_readv (ptrace restricted), senders stage them in the arena instead.
//   allreduce, reduce-scatter(v)   small: every rank reduces the eager copies of its part in rank order;
//               large: pipelined through rings in the segment, rank j reducing shard j (reduce_pipeline.h).
//   allgather: every rank posts one input (eager copy or address); each reads every peer's, no count matrix.
//   allgatherv: as alltoallv.
//   broadcast: one direct (or eager) read per rank.
//   send / recv: a channel per ordered pair; the receiver pulls and acknowledges.
// Reductions always run in rank order, so every rank gets bit-identical results; float16 and bfloat16
// accumulate in float32.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/shm/peer_memory.h"
#include "comm/shm/reduce_pipeline.h"
#include "comm/shm/shm_attach.h"
#include "comm/shm/split_planner.h"
#include "core/memory.h"

namespace atb_ops::shm {

class ShmCommunicator final : public Communicator {
 public:
  explicit ShmCommunicator(const CommConfig& config);
  // Tells the peers this rank left (SlotHead::released).
  ~ShmCommunicator() override;

  // In the shared-memory arena when every rank mapped every peer's arena and it is worth it (>= 64 KiB).
  at::Tensor emptyOutput(c10::IntArrayRef sizes, const at::TensorOptions& options) override;
  // The reason lands in the segment's header; every waiting peer raises with it at its next health check. The
  // first rank to give up is the one every peer names.
  void abortPeers(const std::string& reason) override;
  bool abandonedByPeer() const override;

 protected:
  void doAlltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) override;
  void doAllgather(const at::Tensor& send, at::Tensor& recv) override;
  void doAllreduce(const at::Tensor& send, at::Tensor& recv, ReduceOp op) override;
  void doReduceScatterV(const at::Tensor& send, const VLayout& sendLayout, at::Tensor& recv, ReduceOp op) override;
  void doBroadcast(at::Tensor& tensor, int32_t root) override;
  void doSend(const at::Tensor& tensor, int32_t peer, int32_t tag) override;
  void doRecv(at::Tensor& tensor, int32_t peer, int32_t tag) override;
  void doSendRecv(std::vector<P2pOp>& ops) override;

 private:
  using Word = std::atomic<uint32_t> SlotHead::*;
  struct Call {
    const char* what;
    uint32_t seq;
    uint32_t parity;
  };

  // Starts this rank's post for the collective in progress (its signature, no eager data yet).
  Call begin(const char* what);
  PostBlock& myPost(const Call& c) const { return att_.view.post(rank(), c.parity); }
  PeerEntry* myEntries(const Call& c) const { return att_.view.entries(rank(), c.parity); }
  // Publishes `word` = c.seq for this rank.
  void announce(const Call& c, Word word, Word waiters);
  // Waits until every peer p with wanted(p) has published `word` >= c.seq; on a fault, tells the peers.
  template <typename Wanted>
  void awaitPeers(const Call& c, Word word, Word waiters, Wanted wanted);
  void awaitAll(const Call& c, Word word, Word waiters) {
    awaitPeers(c, word, waiters, [](int32_t) { return true; });
  }
  // Every peer's post of this call is complete, and its lines are on their way to this core.
  void awaitPosts(const Call& c);
  // Every rank posted the same signature (call_signature.h).
  void checkSameCall(const Call& c) const;
  // alltoallv: what each rank sends to j is what j expects.
  void checkCountMatrix(const Call& c) const;
  bool allEager(const Call& c) const;
  // Gives up on this call: tells the peers why (so they stop waiting) and raises ERROR_RT_FAIL.
  [[noreturn]] void failCall(const Call& c, const std::string& error);

  // A reduction above the eager limit: the pipeline (reduce_pipeline.h), aborting the peers when it raises.
  int64_t reduceEagerLimit() const;
  void runPipeline(const Call& c, const PipeShards& shards);
  // abortPeers with the error that ended this rank's wait (none for a peer that left: ERROR_COMM_PEER_LEFT).
  void giveUp(const c10::Error& e);
  // Raises when a peer gave up, or when the awaited peer (every peer for -1) died or (`leaving`) released this
  // communicator; runs while waits sleep.
  void checkHealth(const char* what, int32_t waitedOn = -1, bool leaving = true) const;

  // alltoallv's pieces.
  void planMoves(const Call& c);
  uint64_t directBytes(const Call& c, int32_t src, int32_t dst) const;
  uint64_t pushed(int32_t src, int32_t dst) const { return push_[static_cast<size_t>(src) * size() + dst]; }
  void copyToSelf(const Call& c, bool streaming) const;
  void moveData(const Call& c, bool selfDone, bool streaming, std::string& error) const;
  bool touchesMyBuffers(const Call& c, int32_t peer) const;

  // Point to point: post a message (waiting only when kP2pSlots are still unacknowledged), take one, wait
  // for an acknowledgement and raise what the receiver reported.
  uint32_t postSend(const at::Tensor& t, int32_t peer, int32_t tag);
  void takeMessage(at::Tensor& t, int32_t peer, int32_t tag);
  void awaitAck(const at::Tensor& t, int32_t peer, uint32_t seq, int32_t tag);
  void waitWord(std::atomic<uint32_t>& word, std::atomic<uint32_t>& waiters, uint32_t target, const char* what,
                int32_t peer);

  // Where peers can read `bytes` at `data`: the address itself when they may read this process's memory or it
  // lies in the arena; else a copy in the arena (a ptrace-restricted host), held by `keep` for the call.
  uint64_t reachable(const void* data, uint64_t bytes, at::Tensor& keep);

  // A buffer that peers may copy in place (process_vm_readv/writev), passed again: onto huge pages
  // (ReusedBufferPages). Arena buffers are shared memory already, copied with memcpy.
  void noteReuse(const at::Tensor& t);

  int64_t eagerLimit_;
  bool split_;
  uint32_t seq_ = 0;
  Attachment att_;
  PeerMemory memory_;
  SplitInput plan_;
  std::vector<uint64_t> push_;  // [src * size + dst] tail bytes the sender writes
  std::vector<uint32_t> sent_;  // [peer] point-to-point messages sent to / received from each peer
  std::vector<uint32_t> received_;
  std::vector<at::Tensor> p2pStaged_;  // [peer * kP2pSlots + slot]: staged sends until their receiver took them
  ReusedBufferPages reused_;
};

}  // namespace atb_ops::shm
