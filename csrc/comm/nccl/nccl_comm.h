// The NCCL backend's logic, written against NcclApi only (no nccl.h, no CUDA): how a dtype travels, how an
// alltoallv layout becomes one group of ncclSend/ncclRecv, who owns a communicator, and how waits get a
// timeout. Built into every atb_ops._C so the mock tests (tests/vendor_mocks/test_nccl_mock.py) run on CPU.
#pragma once

#include <c10/core/ScalarType.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/bootstrap/bootstrap.h"
#include "comm/nccl/nccl_api.h"
#include "core/layout.h"
#include "core/options.h"
#include "core/reduce.h"

namespace atb_ops::nccl {

// How one tensor element travels: `itemsPerElement` wire items of `type`.
struct WireFormat {
  NcclDataType type;
  int64_t itemsPerElement;
};

// Whether NCCL reduces this dtype itself (it has no int16 or bool arithmetic).
bool ncclReduces(c10::ScalarType dtype);

// The NCCL type of a tensor dtype; dtypes NCCL lacks (bool, int16) go as Uint8 bytes, and asBytes=true
// sends any dtype as elementSize bytes per element (point-to-point moves bytes either way).
// Raises ERROR_INVALID_TENSOR_DTYPE for dtypes atb_ops does not move.
WireFormat wireFormatFor(c10::ScalarType dtype, bool asBytes = false);

// One NCCL communicator, either adopted (the param's hcclComm: the caller's, never destroyed or aborted
// here) or created here (owned: destroyed with this object, aborted on a timeout or an asynchronous fault).
// Not thread-safe: NCCL requires one thread at a time per communicator anyway.
class NcclComm {
 public:
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ~NcclComm();

  // Checks that the handle's rank and size (ncclCommUserRank/ncclCommCount) are the param's.
  static std::unique_ptr<NcclComm> adopt(NcclApi& api, CommHandle comm, int32_t rank, int32_t size,
                                         const Timeout& timeout);

  // rankRoot draws the id (ncclGetUniqueId) and broadcasts it through `bootstrap`; every rank then
  // creates a non-blocking communicator and waits for it, so a rank that never joins is a timeout,
  // not a hang.
  static std::unique_ptr<NcclComm> create(NcclApi& api, int32_t rank, int32_t size, int32_t rankRoot,
                                          Bootstrap& bootstrap, const Timeout& timeout);

  CommHandle handle() const { return comm_; }
  bool owned() const { return owned_; }
  int32_t rank() const { return rank_; }
  int32_t size() const { return size_; }
  // Empty while usable; else the first fault, which every later call repeats.
  const std::string& brokenBy() const { return brokenBy_; }

  // Enqueues on `stream` one NCCL group with, for each peer in rank order, an ncclSend of
  // sendCounts[p] elements at byte sdispls[p]*elementSize of `send` and an ncclRecv of recvCounts[p]
  // elements at byte rdispls[p]*elementSize of `recv`; zero counts are skipped (no group at all when
  // nothing moves). The self pair is an ordinary send/recv pair in the same group. The layout was
  // validated (core/layout.h); only the self-consistency NCCL needs is checked here.
  void alltoallv(const AllToAllVLayout& layout, const void* send, void* recv, c10::ScalarType dtype,
                 StreamHandle stream, bool asBytes = false);

  // ncclAllGather of `numel` elements per rank, on `stream`.
  void allgather(const void* send, void* recv, int64_t numel, c10::ScalarType dtype, StreamHandle stream);
  // ncclAllReduce / ncclReduceScatter (recvNumel per rank) / ncclBroadcast of dtypes ncclReduces() accepts.
  void allreduce(const void* send, void* recv, int64_t numel, c10::ScalarType dtype, ReduceOp op, StreamHandle stream);
  void reduceScatter(const void* send, void* recv, int64_t recvNumel, c10::ScalarType dtype, ReduceOp op,
                     StreamHandle stream);
  void broadcast(void* buf, int64_t numel, c10::ScalarType dtype, int32_t root, StreamHandle stream);
  // ncclSend / ncclRecv of whole tensors (as bytes), all in one NCCL group.
  struct Transfer {
    bool isSend;
    void* buf;
    int64_t numel;
    c10::ScalarType dtype;
    int32_t peer;
  };
  void sendRecv(const std::vector<Transfer>& transfers, StreamHandle stream);

  // Blocks until the work enqueued on `stream` is done, polling cudaStreamQuery and
  // ncclCommGetAsyncError; a timeout or an asynchronous NCCL error aborts the communicator (if owned).
  void waitStream(StreamHandle stream, const char* what);

 private:
  NcclComm(NcclApi& api, CommHandle comm, bool owned, int32_t rank, int32_t size, Timeout timeout);

  // Before enqueueing: repeats an earlier fault, and turns an asynchronous error into a fault.
  void ensureUsable(const char* what);
  // Polls ncclCommGetAsyncError until the communicator leaves InProgress (non-blocking communicators).
  void waitReady(const char* what);
  // Aborts an owned communicator (an adopted one is left to its owner), remembers why, raises.
  [[noreturn]] void fault(bool timedOut, const std::string& message);
  std::string who() const;

  NcclApi& api_;
  CommHandle comm_;
  bool owned_;
  bool aborted_ = false;
  int32_t rank_;
  int32_t size_;
  Timeout timeout_;
  std::string brokenBy_;
};

}  // namespace atb_ops::nccl
