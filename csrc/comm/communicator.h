// The one interface every backend implements. Public calls are the same for all backends: they refuse a
// communicator used from a fork()ed child or after a fault, serialize callers of one communicator, number
// each collective and describe it (call_signature.h) so the backend can compare it across ranks before data
// moves, and remember faults that leave the ranks out of step. Backends implement the protected do*() hooks;
// a backend without a native form of a collective inherits one built on alltoallv.
#pragma once

#include <ATen/core/Tensor.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "comm/call_signature.h"
#include "comm/comm_config.h"
#include "core/layout.h"
#include "core/options.h"
#include "core/reduce.h"
#include "core/status.h"

namespace atb_ops {

// The end of a message naming two ranks' tags that differ (the backends that carry tags check them).
inline constexpr const char* kTagsInOrder =
    "; sends and receives between two ranks meet in call order, so their tags must come in the same order on both "
    "(a receive does not pick a later send by its tag)";

// One point-to-point transfer of a batch (HCCL's HcclSendRecvItem, NCCL's grouped ncclSend/ncclRecv).
struct P2pOp {
  bool isSend = true;
  at::Tensor tensor;  // contiguous; a receive writes it
  int32_t peer = 0;
  // torch.distributed's tag. Sends and receives meet in call order; the backends that carry a tag (shm, gloo)
  // refuse a pair whose tags differ (HCCL and NCCL have none, and ignore it, as torch's NCCL backend does).
  int32_t tag = 0;
};

// What a communicator moved, and by which route, since it was made: tests assert that a path really ran
// (a planner that never splits, an eager limit never used, an arena that always falls back would otherwise
// pass on right data alone). Counted on the rank that does the copy.
struct CommStats {
  std::atomic<uint64_t> collectives{0};       // signature-checked collective calls
  std::atomic<uint64_t> eagerBytes{0};        // shm: through the segment's eager buffers; gloo: inside the check;
                                              // two levels: inside the check, with the chunks between hosts there
  std::atomic<uint64_t> memcpyBytes{0};       // copied straight between ranks' buffers by memcpy (arena, threads)
  std::atomic<uint64_t> vmBytes{0};           // copied straight by process_vm_readv / process_vm_writev
  std::atomic<uint64_t> pushedBytes{0};       // of the straight copies, written by the sender (the split's tail)
  std::atomic<uint64_t> nontemporalBytes{0};  // shm: of the memcpys (self, arena), written around the caches
  std::atomic<uint64_t> pipelineCalls{0};     // reductions through the ring pipeline
  std::atomic<uint64_t> hugePageBytes{0};     // of reused buffers, collapsed onto huge pages (core/memory.h)
  std::atomic<uint64_t> stagedBytes{0};       // copied into the arena for peers that cannot read process memory
  std::atomic<uint64_t> streamedBytes{0};     // gloo: all-to-all messages sent in pieces over several connections
  std::atomic<uint64_t> pairwiseBytes{0};     // gloo: all-reduce inputs reduced pairwise by two ranks
  std::atomic<int32_t> crossMemory{-1};       // shm: 1 peers read process memory, 0 they cannot; -1 n/a
  std::atomic<int32_t> spins{-1};             // shm (and two levels' shm part): 1 waits spin, 0 they yield; -1 n/a
};

// A collective's data, for backends whose cross-check is an exchange of its own that small calls can ride in
// (Communicator::checkAndComplete). Pointers to the caller's arguments; unused ones stay null.
struct EagerCall {
  Collective kind = Collective::kNone;
  const at::Tensor* send = nullptr;         // alltoallv, allgather, allreduce: the input; broadcast: the tensor
  at::Tensor* recv = nullptr;               // alltoallv, allgather, allreduce: the output; broadcast: the tensor
  const AllToAllVLayout* layout = nullptr;  // alltoallv
  ReduceOp op = ReduceOp::kSum;             // allreduce
  int32_t root = -1;                        // broadcast
};

// What a backend's checkAndComplete did.
enum class EagerResult {
  kNotChecked,  // nothing: the call is compared by crossCheck, then its data moves
  kChecked,     // compared; its data still has to move
  kCompleted,   // compared, and its data moved in the same exchange: the call is done
};

class Communicator {
 public:
  Communicator(std::string backend, int32_t rank, int32_t size, Options options);
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  const std::string& backend() const { return backend_; }
  int32_t rank() const { return rank_; }
  int32_t size() const { return size_; }
  const Options& options() const { return options_; }

  // Tensors are contiguous, of one dtype and device; counts and displacements are in elements and were
  // validated (core/layout.h) by the caller against these tensors before any of these is called.
  void alltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv);
  // recv: size() copies of send, in rank order.
  void allgather(const at::Tensor& send, at::Tensor& recv);
  // recv: rank i's send at [displs[i], displs[i] + counts[i]); counts[i] is rank i's send numel.
  void allgatherv(const at::Tensor& send, const VLayout& recvLayout, at::Tensor& recv);
  // recv = send of rank 0 (op) ... (op) send of rank n-1; recv may be send itself. `root` >= 0: a reduce to that
  // rank (HcclReduce: only the root keeps recv), which every rank must name alike, as a broadcast's root.
  void allreduce(const at::Tensor& send, at::Tensor& recv, ReduceOp op, int32_t root = -1);
  // recv (numel m) = the reduction over ranks of send's chunk [rank * m, (rank + 1) * m).
  void reduceScatter(const at::Tensor& send, at::Tensor& recv, ReduceOp op);
  // recv = the reduction over ranks of their send region [displs[rank], + counts[rank]); every rank passes
  // the same layout, and recv has counts[rank] elements.
  void reduceScatterV(const at::Tensor& send, const VLayout& sendLayout, at::Tensor& recv, ReduceOp op);
  // tensor of `root` is copied into everyone's tensor (same numel on every rank).
  void broadcast(at::Tensor& tensor, int32_t root);
  // Point to point: blocks until `peer` took the data (recv: until it arrived). Sizes and dtypes must match, and
  // tags where the backend carries them (see P2pOp::tag).
  void send(const at::Tensor& tensor, int32_t peer, int32_t tag = 0);
  void recv(at::Tensor& tensor, int32_t peer, int32_t tag = 0);
  // Several transfers at once, as one group: every send is posted before any receive waits, so two ranks may
  // each send to the other first. The k-th send from a to b meets b's k-th receive from a.
  void sendRecv(std::vector<P2pOp>& ops);
  void barrier();

  // While one lives, this communicator's calls skip their own comparison: for a part of a communicator made of
  // several, whose owner compared every rank's call over all of them first (its parts' calls follow from it).
  class Trusted {
   public:
    explicit Trusted(Communicator& c) : c_(c) { c_.trusted_ = true; }
    ~Trusted() { c_.trusted_ = false; }
    Trusted(const Trusted&) = delete;
    Trusted& operator=(const Trusted&) = delete;

   private:
    Communicator& c_;
  };

  // A tensor for this communicator's outputs (advised onto huge pages from 32 MiB, core/memory.h); backends may
  // place it where their peers reach it faster.
  virtual at::Tensor emptyOutput(c10::IntArrayRef sizes, const at::TensorOptions& options);

  const CommStats& stats() const { return stats_; }

  // At interpreter exit: releases what must go while the process is still whole (a gloo group's threads and
  // its store), unless a call is in flight; later calls raise. The object itself goes with its last user.
  void shutdown();

  // Tells the ranks of this communicator that may be waiting on this one that it gave up, with the reason, so they
  // raise at once instead of waiting out the timeout (a communicator made of several: a part between hosts failed
  // while the host's other ranks wait in the part within it). A no-op where the backend has no way to (default).
  virtual void abortPeers(const std::string& reason) { (void)reason; }

  // Empty while usable; else the fault that made it unusable (every later call repeats it).
  std::string failure() const;
  bool failed() const { return !failure().empty(); }
  // A peer gave up on it (timed out, or found a death) and said so where this rank can read it without a call
  // (abortPeers). Such a communicator is never handed to a new operation: its next call here would fail, while the
  // peer's next operation makes a fresh one, and the two ranks' calls would pair one apart. False where the backend
  // has no such note (default).
  virtual bool abandonedByPeer() const { return false; }

 protected:
  // The collective in progress (valid inside the do*() hooks of a collective).
  const CallSignature& signature() const { return signature_; }
  // Compares `sig` across ranks before any data moves, raising the same error on every rank when they differ
  // (checkSignatures); `counts`: alltoallv's layout, whose count matrix must match too. Backends that compare
  // inside their own protocol (shm: the post) or cannot (a vendor library) leave it empty.
  virtual void crossCheck(const CallSignature& sig, const AllToAllVLayout* counts);
  // Compares the call as crossCheck does and, where the backend's comparison is an exchange that can carry the
  // call's data, completes a small call in it (one round instead of two). Default: kNotChecked.
  virtual EagerResult checkAndComplete(const CallSignature& sig, const AllToAllVLayout* counts, const EagerCall& call);

  virtual void doAlltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) = 0;
  virtual void doAllgather(const at::Tensor& send, at::Tensor& recv);
  virtual void doAllgatherv(const at::Tensor& send, const VLayout& recvLayout, at::Tensor& recv);
  virtual void doAllreduce(const at::Tensor& send, at::Tensor& recv, ReduceOp op);
  virtual void doReduceScatterV(const at::Tensor& send, const VLayout& sendLayout, at::Tensor& recv, ReduceOp op);
  virtual void doBroadcast(at::Tensor& tensor, int32_t root);
  virtual void doSend(const at::Tensor& tensor, int32_t peer, int32_t tag);
  virtual void doRecv(at::Tensor& tensor, int32_t peer, int32_t tag);
  // Default: the transfers one by one, in order (backends with a real group override it).
  virtual void doSendRecv(std::vector<P2pOp>& ops);
  virtual void doBarrier();

  // What shutdown() releases, with the call lock held (nothing by default).
  virtual void doShutdown() {}

  // Records a fault found outside a public call's try/catch (e.g. while enqueued work drains).
  void markFailed(Status status, const std::string& why);

  CommStats stats_;

 private:
  // `sig`: the collective's signature (null for point to point, which checks each message itself).
  // `eager`: the call's data, for checkAndComplete (null: crossCheck only).
  template <typename F>
  void call(const char* what, const CallSignature* sig, const AllToAllVLayout* counts, F&& body,
            const EagerCall* eager = nullptr);
  // Raises ERROR_INVALID_PARAM unless rank `r` (a call's `role`: root, peer) is one of this communicator's; rank-local,
  // before the call is numbered and any data moves.
  void checkRank(const char* what, const char* role, int32_t r) const;

  const std::string backend_;
  const int32_t rank_;
  const int32_t size_;
  const Options options_;
  const pid_t creator_;
  std::mutex callMutex_;
  uint32_t seq_ = 0;      // collectives issued, under callMutex_
  bool trusted_ = false;  // Trusted: set by the one owner that issues this communicator's calls
  CallSignature signature_{};
  mutable std::mutex failureMutex_;
  std::string failure_;
  Status failureStatus_ = Status::NO_ERROR;
};

}  // namespace atb_ops
