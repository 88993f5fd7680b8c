#include "comm/communicator.h"

#include <ATen/ops/empty.h>
#include <unistd.h>

#include <algorithm>

#include "core/memory.h"
#include "core/process.h"
#include "core/status.h"

namespace atb_ops {
namespace {

std::vector<int64_t> filled(int32_t n, int64_t value) {
  return std::vector<int64_t>(static_cast<size_t>(n), value);
}

std::vector<int64_t> strided(int32_t n, int64_t stride) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) v[i] = i * stride;
  return v;
}

at::Tensor flat(const at::Tensor& t) {
  return t.view({-1});
}

}  // namespace

Communicator::Communicator(std::string backend, int32_t rank, int32_t size, Options options)
    : backend_(std::move(backend)), rank_(rank), size_(size), options_(std::move(options)), creator_(thisProcessId()) {}

std::string Communicator::failure() const {
  std::lock_guard<std::mutex> lock(failureMutex_);
  return failure_;
}

void Communicator::markFailed(Status status, const std::string& why) {
  std::lock_guard<std::mutex> lock(failureMutex_);
  if (failure_.empty()) {
    failure_ = why;
    failureStatus_ = status;
  }
}

template <typename F>
void Communicator::call(const char* what, const CallSignature* sig, const AllToAllVLayout* counts, F&& body,
                        const EagerCall* eager) {
  // A child of fork() shares the parent's segments, sockets and peer mappings: touching them would corrupt
  // the parent's and its peers' data. NCCL and torch.distributed refuse this too.
  const pid_t self = thisProcessId();
  ATB_CHECK(self == creator_, ERROR_COMM_EMPTY, backend_, " ", what, ": this communicator was created in pid ",
            creator_, " and cannot be used after fork() (this is pid ", self, "); create a new operation in the child");
  // One call at a time per communicator: ranks must issue their calls on one communicator in the same
  // order, and two threads interleaving on it could not.
  std::lock_guard<std::mutex> serial(callMutex_);
  Status status;
  std::string broken;
  {
    std::lock_guard<std::mutex> lock(failureMutex_);
    status = failureStatus_;
    broken = failure_;
  }
  if (!broken.empty()) {
    // The original fault's name, so callers see the same kind of error on every later call.
    detail::raise(status, __func__, __FILE__, __LINE__,
                  backend_ + " " + what + ": this communicator failed earlier and is unusable (" + broken +
                      "); a new operation with the same param creates a fresh one");
  }
  try {
    if (sig != nullptr) {
      signature_ = *sig;
      signature_.seq = ++seq_;
      stats_.collectives.fetch_add(1, std::memory_order_relaxed);
      if (!trusted_) {
        const EagerResult done =
            eager != nullptr ? checkAndComplete(signature_, counts, *eager) : EagerResult::kNotChecked;
        if (done == EagerResult::kCompleted) return;
        if (done == EagerResult::kNotChecked) crossCheck(signature_, counts);
      }
    }
    body();
  } catch (const StatusError& e) {
    if (isCommunicatorFault(e.status())) markFailed(e.status(), e.what_without_backtrace());
    throw;
  }
}

void Communicator::shutdown() {
  std::unique_lock<std::mutex> serial(callMutex_, std::try_to_lock);
  if (!serial.owns_lock() || ::getpid() != creator_) return;  // busy in another thread, or the parent's
  markFailed(Status::ERROR_COMM_EMPTY, "it was shut down at interpreter exit");
  doShutdown();
}

void Communicator::alltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) {
  const CallSignature sig = makeSignature(Collective::kAlltoallv, 0, send.scalar_type(), 0);
  EagerCall eager{Collective::kAlltoallv, &send, &recv, &layout};
  call("alltoallv", &sig, &layout, [&] { doAlltoallv(send, layout, recv); }, &eager);
}

void Communicator::allgather(const at::Tensor& send, at::Tensor& recv) {
  // Checked before the call is numbered: a rank-local refusal must leave this rank's call count in step.
  ATB_CHECK(recv.nbytes() == send.nbytes() * static_cast<uint64_t>(size()), ERROR_INVALID_TENSOR_SIZE, backend_,
            " allgather: output of ", recv.nbytes(), " bytes, expected ", size(), " x ", send.nbytes());
  const CallSignature sig = makeSignature(Collective::kAllgather, 0, send.scalar_type(), send.nbytes());
  EagerCall eager{Collective::kAllgather, &send, &recv};
  call("allgather", &sig, nullptr, [&] { doAllgather(send, recv); }, &eager);
}

void Communicator::allgatherv(const at::Tensor& send, const VLayout& recvLayout, at::Tensor& recv) {
  CallSignature sig = makeSignature(Collective::kAllgatherv, 0, send.scalar_type(), 0);
  sig.layout = layoutDigest(recvLayout);
  call("allgatherv", &sig, nullptr, [&] { doAllgatherv(send, recvLayout, recv); });
}

void Communicator::allreduce(const at::Tensor& send, at::Tensor& recv, ReduceOp op, int32_t root) {
  CallSignature sig = makeSignature(Collective::kAllreduce, 0, send.scalar_type(), send.nbytes());
  sig.reduceOp = static_cast<int8_t>(op);
  sig.root = root;
  EagerCall eager{Collective::kAllreduce, &send, &recv, nullptr, op};
  call("allreduce", &sig, nullptr, [&] { doAllreduce(send, recv, op); }, &eager);
}

void Communicator::reduceScatter(const at::Tensor& send, at::Tensor& recv, ReduceOp op) {
  const int64_t m = recv.numel();
  const VLayout layout{filled(size(), m), strided(size(), m)};
  CallSignature sig = makeSignature(Collective::kReduceScatter, 0, send.scalar_type(), send.nbytes());
  sig.reduceOp = static_cast<int8_t>(op);
  sig.layout = layoutDigest(layout);
  call("reduce_scatter", &sig, nullptr, [&] { doReduceScatterV(send, layout, recv, op); });
}

void Communicator::reduceScatterV(const at::Tensor& send, const VLayout& sendLayout, at::Tensor& recv, ReduceOp op) {
  CallSignature sig = makeSignature(Collective::kReduceScatterV, 0, send.scalar_type(), 0);
  sig.reduceOp = static_cast<int8_t>(op);
  sig.layout = layoutDigest(sendLayout);
  call("reduce_scatterv", &sig, nullptr, [&] { doReduceScatterV(send, sendLayout, recv, op); });
}

void Communicator::broadcast(at::Tensor& tensor, int32_t root) {
  checkRank("broadcast", "root", root);  // an adopted hcclComm or a rank table let set_param pass any rankRoot
  CallSignature sig = makeSignature(Collective::kBroadcast, 0, tensor.scalar_type(), tensor.nbytes());
  sig.root = root;
  EagerCall eager{Collective::kBroadcast, &tensor, &tensor, nullptr, ReduceOp::kSum, root};
  call("broadcast", &sig, nullptr, [&] { doBroadcast(tensor, root); }, &eager);
}

void Communicator::checkRank(const char* what, const char* role, int32_t r) const {
  ATB_CHECK(r >= 0 && r < size(), ERROR_INVALID_PARAM, backend_, " ", what, ": ", role, " ", r,
            " is not a rank of this communicator of ", size(), " ranks");
}

void Communicator::send(const at::Tensor& tensor, int32_t peer, int32_t tag) {
  checkRank("send", "peer", peer);
  call("send", nullptr, nullptr, [&] { doSend(tensor, peer, tag); });
}

void Communicator::recv(at::Tensor& tensor, int32_t peer, int32_t tag) {
  checkRank("recv", "peer", peer);
  call("recv", nullptr, nullptr, [&] { doRecv(tensor, peer, tag); });
}

void Communicator::sendRecv(std::vector<P2pOp>& ops) {
  for (const P2pOp& op : ops) checkRank("send/recv", "peer", op.peer);
  call("send/recv", nullptr, nullptr, [&] { doSendRecv(ops); });
}

void Communicator::barrier() {
  const CallSignature sig = makeSignature(Collective::kBarrier, 0, c10::ScalarType::Undefined, 0);
  EagerCall eager{Collective::kBarrier};
  call("barrier", &sig, nullptr, [&] { doBarrier(); }, &eager);
}

void Communicator::crossCheck(const CallSignature&, const AllToAllVLayout*) {}

EagerResult Communicator::checkAndComplete(const CallSignature&, const AllToAllVLayout*, const EagerCall&) {
  return EagerResult::kNotChecked;
}

at::Tensor Communicator::emptyOutput(c10::IntArrayRef sizes, const at::TensorOptions& options) {
  // A fresh output of 32 MiB or more faults every page as it is written: huge pages fault 512x less.
  at::Tensor out = at::empty(sizes, options);
  adviseHugePages(out);
  return out;
}

// --- the algorithms a backend inherits when it has no native one: all are one alltoallv ---

void Communicator::doAllgather(const at::Tensor& send, at::Tensor& recv) {
  doAlltoallv(send, allGatherLayout(size(), send.numel()), recv);
}

void Communicator::doAllgatherv(const at::Tensor& send, const VLayout& r, at::Tensor& recv) {
  const AllToAllVLayout l{filled(size(), send.numel()), filled(size(), 0), r.counts, r.displs};
  doAlltoallv(send, l, recv);
}

void Communicator::doReduceScatterV(const at::Tensor& send, const VLayout& s, at::Tensor& recv, ReduceOp op) {
  // Every rank's chunk for this rank lands in one row of `rows`, then the rows are reduced in rank order.
  const int64_t m = recv.numel();
  at::Tensor rows = at::empty({size(), m}, recv.options());
  const AllToAllVLayout l{s.counts, s.displs, filled(size(), m), strided(size(), m)};
  doAlltoallv(send, l, rows);
  std::vector<at::Tensor> parts;
  for (int32_t i = 0; i < size(); ++i) parts.push_back(rows[i]);
  reduceInOrder(parts, recv, op);
}

void Communicator::doAllreduce(const at::Tensor& send, at::Tensor& recv, ReduceOp op) {
  // Reduce-scatter into shards of ceil(numel / size), then all-gather the shards.
  const int64_t numel = send.numel();
  const int64_t chunk = (numel + size() - 1) / size();
  VLayout shards;
  for (int32_t i = 0; i < size(); ++i) {
    const int64_t begin = std::min(numel, i * chunk);
    shards.displs.push_back(begin);
    shards.counts.push_back(std::min(numel, begin + chunk) - begin);
  }
  at::Tensor mine = at::empty({shards.counts[rank()]}, send.options());
  doReduceScatterV(send, shards, mine, op);
  doAllgatherv(mine, shards, recv);
}

void Communicator::doBroadcast(at::Tensor& tensor, int32_t root) {
  const int64_t n = tensor.numel();
  AllToAllVLayout l{filled(size(), 0), filled(size(), 0), filled(size(), 0), filled(size(), 0)};
  at::Tensor none = at::empty({0}, tensor.options());
  if (rank() == root) {
    l.sendCounts = filled(size(), n);
    l.sendCounts[root] = 0;
    doAlltoallv(flat(tensor), l, none);
  } else {
    l.recvCounts[root] = n;
    at::Tensor out = flat(tensor);
    doAlltoallv(none, l, out);
  }
}

void Communicator::doSend(const at::Tensor&, int32_t peer, int32_t /*tag*/) {
  ATB_FAIL(ERROR_INVALID_PARAM, "backend '", backend(), "' has no point-to-point send (to rank ", peer, ")");
}

void Communicator::doRecv(at::Tensor&, int32_t peer, int32_t /*tag*/) {
  ATB_FAIL(ERROR_INVALID_PARAM, "backend '", backend(), "' has no point-to-point recv (from rank ", peer, ")");
}

void Communicator::doSendRecv(std::vector<P2pOp>& ops) {
  for (P2pOp& op : ops) {
    if (op.isSend) {
      doSend(op.tensor, op.peer, op.tag);
    } else {
      doRecv(op.tensor, op.peer, op.tag);
    }
  }
}

void Communicator::doBarrier() {
  const AllToAllVLayout zero{filled(size(), 0), filled(size(), 0), filled(size(), 0), filled(size(), 0)};
  at::Tensor none = at::empty({0}, at::kByte);
  doAlltoallv(none, zero, none);
}

}  // namespace atb_ops
