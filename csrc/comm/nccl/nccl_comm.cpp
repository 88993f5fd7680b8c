#include "comm/nccl/nccl_comm.h"

#include <c10/util/Exception.h>

#include <cstring>
#include <thread>

#include "core/status.h"

namespace atb_ops::nccl {
namespace {

using Clock = std::chrono::steady_clock;

// Polls answer within microseconds once NCCL has progressed, so stay tight for the first 2 ms and then back off:
// a waiting rank should not keep a core busy for minutes. A non-blocking communicator's every ncclGroupEnd
// returns "in progress" while NCCL enqueues the kernels (tens of microseconds): 64 yields were too few, and each
// call then slept 100 us or more (H100, world size 1: ~220 us per AllToAllVV2 of any size, against ~32 us for
// torch's NCCL all_to_all_single).
void pollBackoff(int& attempt) {
  static thread_local Clock::time_point since;
  if (attempt == 0) since = Clock::now();
  const auto waited = Clock::now() - since;
  if (waited < std::chrono::milliseconds(2)) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(waited < std::chrono::milliseconds(100) ? 100 : 1000));
  }
  ++attempt;
}

// Ends an NCCL group on every path: a send that fails half-way must not leave this thread inside a
// group, or every later NCCL call of the process would be silently deferred.
class GroupGuard {
 public:
  GroupGuard(NcclApi& api, CommHandle comm, const std::string& context) : api_(api), comm_(comm) {
    ATB_NCCL_CHECK(api_, comm_, "ncclGroupStart", api_.groupStart(), context);
    open_ = true;
  }
  // InProgress (non-blocking communicator) is returned for the caller to wait on.
  NcclResult end(const std::string& context) {
    open_ = false;
    const NcclResult r = api_.groupEnd();
    if (r != NcclResult::Success && r != NcclResult::InProgress) {
      raiseNcclError(api_, comm_, r, "ncclGroupEnd", context, __FILE__, __LINE__);
    }
    return r;
  }
  ~GroupGuard() {
    if (open_) (void)api_.groupEnd();  // already unwinding with the first error, which is the one to report
  }
  GroupGuard(const GroupGuard&) = delete;
  GroupGuard& operator=(const GroupGuard&) = delete;

 private:
  NcclApi& api_;
  CommHandle comm_;
  bool open_ = false;
};

}  // namespace

bool ncclReduces(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Char:
    case c10::ScalarType::Byte:
    case c10::ScalarType::Int:
    case c10::ScalarType::Long:
    case c10::ScalarType::Half:
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Float:
    case c10::ScalarType::Double: return true;
    default: return false;
  }
}

WireFormat wireFormatFor(c10::ScalarType dtype, bool asBytes) {
  const auto bytes = [&] { return WireFormat{NcclDataType::Uint8, static_cast<int64_t>(c10::elementSize(dtype))}; };
  switch (dtype) {
    case c10::ScalarType::Bool:
    case c10::ScalarType::Byte: return WireFormat{NcclDataType::Uint8, 1};
    case c10::ScalarType::Char: return asBytes ? bytes() : WireFormat{NcclDataType::Int8, 1};
    case c10::ScalarType::Short: return bytes();  // NCCL has no 16-bit integer type
    case c10::ScalarType::Int: return asBytes ? bytes() : WireFormat{NcclDataType::Int32, 1};
    case c10::ScalarType::Long: return asBytes ? bytes() : WireFormat{NcclDataType::Int64, 1};
    case c10::ScalarType::Half: return asBytes ? bytes() : WireFormat{NcclDataType::Float16, 1};
    case c10::ScalarType::BFloat16: return asBytes ? bytes() : WireFormat{NcclDataType::Bfloat16, 1};
    case c10::ScalarType::Float: return asBytes ? bytes() : WireFormat{NcclDataType::Float32, 1};
    case c10::ScalarType::Double: return asBytes ? bytes() : WireFormat{NcclDataType::Float64, 1};
    default:
      ATB_FAIL(ERROR_INVALID_TENSOR_DTYPE, "backend 'nccl' cannot move dtype ", c10::toString(dtype),
               "; supported: int8, int16, int32, int64, float16, bfloat16, float32, uint8, bool, float64");
  }
}

NcclComm::NcclComm(NcclApi& api, CommHandle comm, bool owned, int32_t rank, int32_t size, Timeout timeout)
    : api_(api), comm_(comm), owned_(owned), rank_(rank), size_(size), timeout_(timeout) {}

NcclComm::~NcclComm() {
  // Only what we created is ours to free; an aborted communicator is already freed.
  if (owned_ && !aborted_ && comm_ != nullptr) (void)api_.commDestroy(comm_);
}

std::unique_ptr<NcclComm> NcclComm::adopt(NcclApi& api, CommHandle comm, int32_t rank, int32_t size,
                                          const Timeout& timeout) {
  ATB_CHECK(comm != nullptr, ERROR_INVALID_PARAM, "backend 'nccl': hcclComm handle is null");
  std::unique_ptr<NcclComm> c(new NcclComm(api, comm, /*owned=*/false, rank, size, timeout));
  int actualRank = -1;
  int actualSize = -1;
  ATB_NCCL_CHECK(api, comm, "ncclCommUserRank", api.commUserRank(comm, &actualRank),
                 "backend 'nccl': reading the rank of hcclComm ", comm);
  ATB_NCCL_CHECK(api, comm, "ncclCommCount", api.commCount(comm, &actualSize),
                 "backend 'nccl': reading the size of hcclComm ", comm);
  ATB_CHECK(actualRank == rank && actualSize == size, ERROR_INVALID_PARAM, "backend 'nccl': param says rank ", rank,
            " of rankSize ", size, " but hcclComm ", comm, " is rank ", actualRank, " of ", actualSize);
  return c;
}

std::unique_ptr<NcclComm> NcclComm::create(NcclApi& api, int32_t rank, int32_t size, int32_t rankRoot,
                                           Bootstrap& bootstrap, const Timeout& timeout) {
  UniqueId id;
  std::string bytes;
  if (rank == rankRoot) {
    ATB_NCCL_CHECK(api, nullptr, "ncclGetUniqueId", api.getUniqueId(&id), "backend 'nccl' root rank ", rankRoot,
                   " drawing the unique id (", bootstrap.describe(), ")");
    bytes.assign(id.bytes.data(), kUniqueIdBytes);
  }
  bytes = bootstrap.broadcast(bytes);
  ATB_CHECK(bytes.size() == kUniqueIdBytes, ERROR_COMM_EMPTY, "backend 'nccl' rank ", rank, ": the bootstrap (",
            bootstrap.describe(), ") delivered ", bytes.size(), " bytes, not a ", kUniqueIdBytes, "-byte unique id");
  std::memcpy(id.bytes.data(), bytes.data(), kUniqueIdBytes);
  CommHandle handle = nullptr;
  const NcclResult r = api.commInitRank(&handle, size, id, rank, /*blocking=*/false);
  // Owned from here on, so every failure below frees what NCCL allocated.
  std::unique_ptr<NcclComm> c(new NcclComm(api, handle, /*owned=*/true, rank, size, timeout));
  if (r != NcclResult::Success && r != NcclResult::InProgress) {
    if (handle != nullptr) {
      (void)api.commAbort(handle);
      c->aborted_ = true;
    }
    raiseNcclError(
        api, handle, r, "ncclCommInitRankConfig",
        c10::str("backend 'nccl' rank ", rank, " of ", size, " creating its communicator (", bootstrap.describe(), ")"),
        __FILE__, __LINE__);
  }
  ATB_CHECK(handle != nullptr, ERROR_NCCL_FAIL, "backend 'nccl' rank ", rank, " of ", size,
            ": ncclCommInitRankConfig returned no communicator (", bootstrap.describe(), ")");
  c->waitReady("communicator creation (waits for every rank to join)");
  return c;
}

std::string NcclComm::who() const {
  return c10::str("backend 'nccl' rank ", rank_, " of ", size_, owned_ ? " (communicator " : " (adopted hcclComm ",
                  comm_, ")");
}

void NcclComm::fault(bool timedOut, const std::string& message) {
  std::string full = who() + ": " + message;
  if (owned_ && !aborted_) {
    // ncclCommAbort, not Destroy: Destroy would wait for the very operations that are stuck.
    (void)api_.commAbort(comm_);
    aborted_ = true;
    full += "; the communicator was aborted";
  } else if (!owned_) {
    full += "; hcclComm belongs to the caller, who must abort it (ncclCommAbort)";
  }
  if (brokenBy_.empty()) brokenBy_ = full;
  if (timedOut) ATB_FAIL(ERROR_COMM_TIMEOUT, full);
  ATB_FAIL(ERROR_NCCL_FAIL, full);
}

void NcclComm::ensureUsable(const char* what) {
  ATB_CHECK(brokenBy_.empty(), ERROR_NCCL_FAIL, "backend 'nccl' ", what,
            ": the communicator is unusable since: ", brokenBy_);
  NcclResult async = NcclResult::Success;
  ATB_NCCL_CHECK(api_, comm_, "ncclCommGetAsyncError", api_.commGetAsyncError(comm_, &async), who(), " ", what);
  if (async == NcclResult::InProgress) {
    waitReady(what);
  } else if (async != NcclResult::Success) {
    fault(false,
          c10::str(what, ": an earlier operation failed asynchronously with ncclResult ", static_cast<int>(async), " (",
                   api_.getErrorString(async), "); NCCL last error: '", api_.getLastError(comm_), "'"));
  }
}

void NcclComm::waitReady(const char* what) {
  const auto deadline = Clock::now() + timeout_.value;
  int attempt = 0;
  while (true) {
    NcclResult async = NcclResult::Success;
    ATB_NCCL_CHECK(api_, comm_, "ncclCommGetAsyncError", api_.commGetAsyncError(comm_, &async), who(), " waiting for ",
                   what);
    if (async == NcclResult::Success) return;
    if (async != NcclResult::InProgress) {
      fault(false, c10::str(what, " failed asynchronously with ncclResult ", static_cast<int>(async), " (",
                            api_.getErrorString(async), "); NCCL last error: '", api_.getLastError(comm_), "'"));
    }
    if (Clock::now() >= deadline) {
      fault(true, c10::str(what, " did not complete within ", timeout_.describe(), " (a peer rank missing or stuck?)"));
    }
    pollBackoff(attempt);
  }
}

void NcclComm::alltoallv(const AllToAllVLayout& l, const void* send, void* recv, c10::ScalarType dtype,
                         StreamHandle stream, bool asBytes) {
  const WireFormat wire = wireFormatFor(dtype, asBytes);
  const int64_t elementSize = static_cast<int64_t>(c10::elementSize(dtype));
  // Cross-rank agreement is unknowable here, but the self pair is ours alone: NCCL would truncate or hang.
  ATB_CHECK(l.sendCounts[rank_] == l.recvCounts[rank_], ERROR_INVALID_PARAM, "backend 'nccl' rank ", rank_,
            ": sendCounts[", rank_, "]=", l.sendCounts[rank_], " (to itself) must equal recvCounts[", rank_,
            "]=", l.recvCounts[rank_]);
  ensureUsable("alltoallv");
  bool any = false;
  for (int32_t p = 0; p < size_; ++p) any = any || l.sendCounts[p] > 0 || l.recvCounts[p] > 0;
  if (!any) return;

  const auto* sendBytes = static_cast<const char*>(send);
  auto* recvBytes = static_cast<char*>(recv);
  GroupGuard group(api_, comm_, who() + " alltoallv: ncclGroupStart");
  for (int32_t p = 0; p < size_; ++p) {
    if (l.sendCounts[p] > 0) {
      const char* at = sendBytes + l.sdispls[p] * elementSize;
      const auto items = static_cast<size_t>(l.sendCounts[p] * wire.itemsPerElement);
      ATB_NCCL_CHECK(api_, comm_, "ncclSend", api_.send(at, items, wire.type, p, comm_, stream), who(),
                     " alltoallv: sending ", l.sendCounts[p], " elements from sdispls[", p, "]=", l.sdispls[p],
                     " to rank ", p);
    }
    if (l.recvCounts[p] > 0) {
      char* at = recvBytes + l.rdispls[p] * elementSize;
      const auto items = static_cast<size_t>(l.recvCounts[p] * wire.itemsPerElement);
      ATB_NCCL_CHECK(api_, comm_, "ncclRecv", api_.recv(at, items, wire.type, p, comm_, stream), who(),
                     " alltoallv: receiving ", l.recvCounts[p], " elements at rdispls[", p, "]=", l.rdispls[p],
                     " from rank ", p);
    }
  }
  if (group.end(who() + " alltoallv: ncclGroupEnd") == NcclResult::InProgress) waitReady("alltoallv");
}

void NcclComm::allgather(const void* send, void* recv, int64_t numel, c10::ScalarType dtype, StreamHandle stream) {
  const WireFormat wire = wireFormatFor(dtype);
  ensureUsable("allgather");
  if (numel == 0) return;
  const auto items = static_cast<size_t>(numel * wire.itemsPerElement);
  const NcclResult r = api_.allGather(send, recv, items, wire.type, comm_, stream);
  if (r != NcclResult::Success && r != NcclResult::InProgress) {
    raiseNcclError(api_, comm_, r, "ncclAllGather", c10::str(who(), " allgather of ", numel, " elements per rank"),
                   __FILE__, __LINE__);
  }
  if (r == NcclResult::InProgress) waitReady("allgather");
}

namespace {

NcclRedOp toNccl(ReduceOp op) {
  return static_cast<NcclRedOp>(static_cast<int32_t>(op));
}

}  // namespace

void NcclComm::allreduce(const void* send, void* recv, int64_t numel, c10::ScalarType dtype, ReduceOp op,
                         StreamHandle stream) {
  const WireFormat wire = wireFormatFor(dtype);
  ensureUsable("allreduce");
  if (numel == 0) return;
  const NcclResult r = api_.allReduce(send, recv, static_cast<size_t>(numel), wire.type, toNccl(op), comm_, stream);
  if (r != NcclResult::Success && r != NcclResult::InProgress) {
    raiseNcclError(api_, comm_, r, "ncclAllReduce",
                   c10::str(who(), " allreduce (", reduceOpName(op), ") of ", numel, " elements"), __FILE__, __LINE__);
  }
  if (r == NcclResult::InProgress) waitReady("allreduce");
}

void NcclComm::reduceScatter(const void* send, void* recv, int64_t recvNumel, c10::ScalarType dtype, ReduceOp op,
                             StreamHandle stream) {
  const WireFormat wire = wireFormatFor(dtype);
  ensureUsable("reduce_scatter");
  if (recvNumel == 0) return;
  const NcclResult r =
      api_.reduceScatter(send, recv, static_cast<size_t>(recvNumel), wire.type, toNccl(op), comm_, stream);
  if (r != NcclResult::Success && r != NcclResult::InProgress) {
    raiseNcclError(api_, comm_, r, "ncclReduceScatter",
                   c10::str(who(), " reduce_scatter (", reduceOpName(op), ") of ", recvNumel, " elements per rank"),
                   __FILE__, __LINE__);
  }
  if (r == NcclResult::InProgress) waitReady("reduce_scatter");
}

void NcclComm::broadcast(void* buf, int64_t numel, c10::ScalarType dtype, int32_t root, StreamHandle stream) {
  const WireFormat wire = wireFormatFor(dtype, /*asBytes=*/true);
  ensureUsable("broadcast");
  if (numel == 0) return;
  const auto items = static_cast<size_t>(numel * wire.itemsPerElement);
  const NcclResult r = api_.broadcast(buf, buf, items, wire.type, root, comm_, stream);
  if (r != NcclResult::Success && r != NcclResult::InProgress) {
    raiseNcclError(api_, comm_, r, "ncclBroadcast",
                   c10::str(who(), " broadcast of ", numel, " elements from rank ", root), __FILE__, __LINE__);
  }
  if (r == NcclResult::InProgress) waitReady("broadcast");
}

void NcclComm::sendRecv(const std::vector<Transfer>& transfers, StreamHandle stream) {
  ensureUsable("send/recv");
  bool any = false;
  for (const Transfer& t : transfers) any = any || t.numel > 0;
  if (!any) return;
  GroupGuard group(api_, comm_, who() + " send/recv: ncclGroupStart");
  for (const Transfer& t : transfers) {
    if (t.numel == 0) continue;
    const WireFormat wire = wireFormatFor(t.dtype, /*asBytes=*/true);
    const auto items = static_cast<size_t>(t.numel * wire.itemsPerElement);
    if (t.isSend) {
      ATB_NCCL_CHECK(api_, comm_, "ncclSend", api_.send(t.buf, items, wire.type, t.peer, comm_, stream), who(),
                     " sending ", t.numel, " elements to rank ", t.peer);
    } else {
      ATB_NCCL_CHECK(api_, comm_, "ncclRecv", api_.recv(t.buf, items, wire.type, t.peer, comm_, stream), who(),
                     " receiving ", t.numel, " elements from rank ", t.peer);
    }
  }
  if (group.end(who() + " send/recv: ncclGroupEnd") == NcclResult::InProgress) waitReady("send/recv");
}

void NcclComm::waitStream(StreamHandle stream, const char* what) {
  ATB_CHECK(brokenBy_.empty(), ERROR_NCCL_FAIL, "backend 'nccl' ", what,
            ": the communicator is unusable since: ", brokenBy_);
  const auto deadline = Clock::now() + timeout_.value;
  int attempt = 0;
  while (true) {
    std::string error;
    const StreamState s = api_.streamQuery(stream, &error);
    if (s == StreamState::Complete) return;
    if (s == StreamState::Failed) fault(false, c10::str(what, ": the CUDA stream failed: ", error));
    // A peer that died leaves our kernels spinning forever; NCCL reports it here, not on the stream.
    NcclResult async = NcclResult::Success;
    ATB_NCCL_CHECK(api_, comm_, "ncclCommGetAsyncError", api_.commGetAsyncError(comm_, &async), who(), " waiting for ",
                   what);
    if (async != NcclResult::Success && async != NcclResult::InProgress) {
      fault(false, c10::str(what, " failed asynchronously with ncclResult ", static_cast<int>(async), " (",
                            api_.getErrorString(async), "); NCCL last error: '", api_.getLastError(comm_), "'"));
    }
    if (Clock::now() >= deadline) {
      fault(true, c10::str(what, " did not finish on the stream within ", timeout_.describe(),
                           " (a peer rank missing or stuck?)"));
    }
    pollBackoff(attempt);
  }
}

}  // namespace atb_ops::nccl
