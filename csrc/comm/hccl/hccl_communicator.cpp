#include "comm/hccl/hccl_communicator.h"

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "comm/hccl/hccl_check.h"
#include "comm/hccl/hccl_dtype.h"
#include "core/status.h"

namespace atb_ops::hccl {
namespace {

using Clock = std::chrono::steady_clock;

// HCCL rejects a null buffer even when nothing moves: an empty tensor gets a one-element stand-in.
void* bufferOf(const at::Tensor& t, at::Tensor& standIn) {
  if (t.numel() > 0) return t.data_ptr();
  if (!standIn.defined()) standIn = at::empty({1}, t.options());
  return standIn.data_ptr();
}

std::vector<uint64_t> toU64(const std::vector<int64_t>& v) {
  // validateLayout has already rejected negative values.
  return std::vector<uint64_t>(v.begin(), v.end());
}

// An aclrtEvent for the scope of one wait.
class ScopedEvent {
 public:
  explicit ScopedEvent(HcclApi& api) : api_(api) {
    ATB_ACL_CHECK(api_, "aclrtCreateEvent", api_.createEvent(&event_), "for a host wait");
  }
  ~ScopedEvent() {
    if (event_ != nullptr) api_.destroyEvent(event_);
  }
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;
  EventHandle get() const { return event_; }

 private:
  HcclApi& api_;
  EventHandle event_ = nullptr;
};

}  // namespace

AlltoallvPath alltoallvPath(const Options& options) {
  return options.hcclAlltoallv == "p2p" ? AlltoallvPath::kBatchSendRecv : AlltoallvPath::kAlltoAllV;
}

const char* pathName(AlltoallvPath p) {
  return p == AlltoallvPath::kAlltoAllV ? "HcclAlltoAllV" : "HcclBatchSendRecv";
}

std::vector<SendRecvItem> pairwiseItems(int32_t rank, int32_t size, char* sendBase, char* recvBase, int64_t elemSize,
                                        int32_t dataType, const AllToAllVLayout& l) {
  std::vector<SendRecvItem> items;
  items.reserve(2 * static_cast<size_t>(size));
  for (int32_t step = 1; step < size; ++step) {
    const int32_t to = (rank + step) % size;
    const int32_t from = (rank - step + size) % size;
    if (l.sendCounts[to] > 0) {
      items.push_back(SendRecvItem{SendRecvType::kSend, sendBase + l.sdispls[to] * elemSize,
                                   static_cast<uint64_t>(l.sendCounts[to]), dataType, static_cast<uint32_t>(to)});
    }
    if (l.recvCounts[from] > 0) {
      items.push_back(SendRecvItem{SendRecvType::kRecv, recvBase + l.rdispls[from] * elemSize,
                                   static_cast<uint64_t>(l.recvCounts[from]), dataType, static_cast<uint32_t>(from)});
    }
  }
  return items;
}

HcclCommunicator::HcclCommunicator(const CommConfig& config, std::shared_ptr<HcclApi> api)
    : Communicator("hccl", config.rank, config.rankSize, config.options),
      api_(std::move(api)),
      device_(deviceFor(config)),
      commDomain_(config.commDomain) {
  TORCH_CHECK(api_ != nullptr, "HcclCommunicator needs an HcclApi");
  comm_ = acquireComm(api_, config);
}

std::string HcclCommunicator::describe() const {
  return "on rank " + std::to_string(rank()) + " of " + std::to_string(size()) + ", commDomain '" + commDomain_ +
         "', device " + std::to_string(device_);
}

void HcclCommunicator::finish(StreamHandle stream, const char* what) {
  if (options().hcclBlocking) waitForStream(stream, what);
}

HcclCommunicator::Launch HcclCommunicator::launchFor(const at::Tensor& t, const char* what) const {
  const int32_t tensorDevice = t.device().has_index() ? t.device().index() : -1;
  ATB_CHECK(tensorDevice < 0 || tensorDevice == device_, ERROR_INVALID_PARAM, "hccl ", what, ": tensor is on ",
            t.device(), " but the communicator ", describe(), " was made for device ", device_,
            "; use one commDomain per device");
  const int32_t device = tensorDevice >= 0 ? tensorDevice : device_;
  return Launch{device, api_->currentStream(device)};
}

void HcclCommunicator::doAlltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) {
  static constexpr const char* kWhat = "alltoallv";
  const int32_t dataType = dataTypeFor(send.scalar_type(), "hccl alltoallv input");
  const Launch launch = launchFor(send, kWhat);
  ScopedDevice device(*api_, launch.device);
  if (alltoallvPath(options()) == AlltoallvPath::kBatchSendRecv) {
    alltoallvPairwise(send, layout, recv, dataType, launch.stream);
  } else {
    alltoallvNative(send, layout, recv, dataType, launch.stream);
  }
  finish(launch.stream, kWhat);
}

void HcclCommunicator::alltoallvNative(const at::Tensor& send, const AllToAllVLayout& l, at::Tensor& recv,
                                       int32_t dataType, StreamHandle stream) {
  // HCCL reads the four arrays on the host while enqueuing, as uint64 element counts.
  const std::vector<uint64_t> sendCounts = toU64(l.sendCounts);
  const std::vector<uint64_t> sdispls = toU64(l.sdispls);
  const std::vector<uint64_t> recvCounts = toU64(l.recvCounts);
  const std::vector<uint64_t> rdispls = toU64(l.rdispls);
  // A rank that sends or receives nothing must still take part, with stand-in buffers.
  at::Tensor sendStandIn;
  at::Tensor recvStandIn;
  ATB_HCCL_CHECK(
      *api_, "HcclAlltoAllV",
      api_->alltoAllV(bufferOf(send, sendStandIn), sendCounts.data(), sdispls.data(), dataType,
                      bufferOf(recv, recvStandIn), recvCounts.data(), rdispls.data(), dataType, comm_.get(), stream),
      describe());
}

void HcclCommunicator::alltoallvPairwise(const at::Tensor& send, const AllToAllVLayout& l, at::Tensor& recv,
                                         int32_t dataType, StreamHandle stream) {
  const int64_t es = send.element_size();
  // The one count pair of the cross-rank matrix a rank can check alone; HCCL would never see it here.
  const int32_t me = rank();
  ATB_CHECK(l.sendCounts[me] == l.recvCounts[me], ERROR_INVALID_PARAM, "hccl alltoallv ", describe(), ": sendCounts[",
            me, "]=", l.sendCounts[me], " (to itself) differs from recvCounts[", me, "]=", l.recvCounts[me],
            " (from itself)");
  if (l.sendCounts[me] > 0) {
    // The rank's own share never leaves the device: an ATen copy on the same current stream, which
    // torch_npu flushes ahead of the batch when the stream is fetched for HCCL.
    recv.view({-1})
        .narrow(0, l.rdispls[me], l.recvCounts[me])
        .copy_(send.reshape({-1}).narrow(0, l.sdispls[me], l.sendCounts[me]));
  }
  auto* sendBase = send.numel() > 0 ? static_cast<char*>(send.data_ptr()) : nullptr;
  auto* recvBase = recv.numel() > 0 ? static_cast<char*>(recv.data_ptr()) : nullptr;
  std::vector<SendRecvItem> items = pairwiseItems(me, size(), sendBase, recvBase, es, dataType, l);
  // Every peer this rank exchanges with is in the list; one with nothing either way has no matching
  // entry on the other side, so an empty list is simply nothing to do.
  if (items.empty()) return;
  ATB_HCCL_CHECK(*api_, "HcclBatchSendRecv",
                 api_->batchSendRecv(items.data(), static_cast<uint32_t>(items.size()), comm_.get(), stream), "with ",
                 items.size(), " send/recv items ", describe());
}

void HcclCommunicator::doAllgather(const at::Tensor& send, at::Tensor& recv) {
  static constexpr const char* kWhat = "allgather";
  const int32_t dataType = dataTypeFor(send.scalar_type(), "hccl allgather input");
  // Every rank gathers the same numel: with none, no rank calls HCCL.
  if (send.numel() == 0) return;
  const Launch launch = launchFor(send, kWhat);
  ScopedDevice device(*api_, launch.device);
  ATB_HCCL_CHECK(*api_, "HcclAllGather",
                 api_->allGather(send.data_ptr(), recv.data_ptr(), static_cast<uint64_t>(send.numel()), dataType,
                                 comm_.get(), launch.stream),
                 describe());
  finish(launch.stream, kWhat);
}

void HcclCommunicator::doAllgatherv(const at::Tensor& send, const VLayout& r, at::Tensor& recv) {
  static constexpr const char* kWhat = "allgatherv";
  const int32_t dataType = dataTypeFor(send.scalar_type(), "hccl allgatherv input");
  const std::vector<uint64_t> counts = toU64(r.counts);
  const std::vector<uint64_t> displs = toU64(r.displs);
  const Launch launch = launchFor(send, kWhat);
  ScopedDevice device(*api_, launch.device);
  at::Tensor sendStandIn;
  at::Tensor recvStandIn;
  ATB_HCCL_CHECK(
      *api_, "HcclAllGatherV",
      api_->allGatherV(bufferOf(send, sendStandIn), static_cast<uint64_t>(send.numel()), bufferOf(recv, recvStandIn),
                       counts.data(), displs.data(), dataType, comm_.get(), launch.stream),
      describe());
  finish(launch.stream, kWhat);
}

void HcclCommunicator::doAllreduce(const at::Tensor& send, at::Tensor& recv, ReduceOp op) {
  static constexpr const char* kWhat = "allreduce";
  const int32_t dataType = dataTypeFor(send.scalar_type(), "hccl allreduce input");
  if (send.numel() == 0) return;
  const Launch launch = launchFor(send, kWhat);
  ScopedDevice device(*api_, launch.device);
  ATB_HCCL_CHECK(*api_, "HcclAllReduce",
                 api_->allReduce(send.data_ptr(), recv.data_ptr(), static_cast<uint64_t>(send.numel()), dataType,
                                 static_cast<int32_t>(op), comm_.get(), launch.stream),
                 "(", reduceOpName(op), ") ", describe());
  finish(launch.stream, kWhat);
}

void HcclCommunicator::doReduceScatterV(const at::Tensor& send, const VLayout& s, at::Tensor& recv, ReduceOp op) {
  static constexpr const char* kWhat = "reduce_scatter";
  const int32_t dataType = dataTypeFor(send.scalar_type(), "hccl reduce_scatter input");
  const int64_t m = recv.numel();
  bool equal = true;
  for (int32_t i = 0; i < size() && equal; ++i) equal = s.counts[i] == m && s.displs[i] == i * m;
  const Launch launch = launchFor(send, kWhat);
  ScopedDevice device(*api_, launch.device);
  at::Tensor sendStandIn;
  at::Tensor recvStandIn;
  if (equal) {
    if (m == 0) return;
    ATB_HCCL_CHECK(*api_, "HcclReduceScatter",
                   api_->reduceScatter(send.data_ptr(), recv.data_ptr(), static_cast<uint64_t>(m), dataType,
                                       static_cast<int32_t>(op), comm_.get(), launch.stream),
                   "(", reduceOpName(op), ") ", describe());
  } else {
    const std::vector<uint64_t> counts = toU64(s.counts);
    const std::vector<uint64_t> displs = toU64(s.displs);
    ATB_HCCL_CHECK(
        *api_, "HcclReduceScatterV",
        api_->reduceScatterV(bufferOf(send, sendStandIn), counts.data(), displs.data(), bufferOf(recv, recvStandIn),
                             static_cast<uint64_t>(m), dataType, static_cast<int32_t>(op), comm_.get(), launch.stream),
        "(", reduceOpName(op), ") ", describe());
  }
  finish(launch.stream, kWhat);
}

void HcclCommunicator::doBroadcast(at::Tensor& tensor, int32_t root) {
  static constexpr const char* kWhat = "broadcast";
  const int32_t dataType = dataTypeFor(tensor.scalar_type(), "hccl broadcast tensor");
  if (tensor.numel() == 0) return;
  const Launch launch = launchFor(tensor, kWhat);
  ScopedDevice device(*api_, launch.device);
  ATB_HCCL_CHECK(*api_, "HcclBroadcast",
                 api_->broadcast(tensor.data_ptr(), static_cast<uint64_t>(tensor.numel()), dataType,
                                 static_cast<uint32_t>(root), comm_.get(), launch.stream),
                 "from root ", root, " ", describe());
  finish(launch.stream, kWhat);
}

void HcclCommunicator::doSend(const at::Tensor& tensor, int32_t peer, int32_t /*tag*/) {
  static constexpr const char* kWhat = "send";
  const int32_t dataType = dataTypeFor(tensor.scalar_type(), "hccl send tensor");
  const Launch launch = launchFor(tensor, kWhat);
  ScopedDevice device(*api_, launch.device);
  at::Tensor standIn;
  ATB_HCCL_CHECK(*api_, "HcclSend",
                 api_->send(bufferOf(tensor, standIn), static_cast<uint64_t>(tensor.numel()), dataType,
                            static_cast<uint32_t>(peer), comm_.get(), launch.stream),
                 "to rank ", peer, " ", describe());
  finish(launch.stream, kWhat);
}

void HcclCommunicator::doRecv(at::Tensor& tensor, int32_t peer, int32_t /*tag*/) {
  static constexpr const char* kWhat = "recv";
  const int32_t dataType = dataTypeFor(tensor.scalar_type(), "hccl recv tensor");
  const Launch launch = launchFor(tensor, kWhat);
  ScopedDevice device(*api_, launch.device);
  at::Tensor standIn;
  ATB_HCCL_CHECK(*api_, "HcclRecv",
                 api_->recv(bufferOf(tensor, standIn), static_cast<uint64_t>(tensor.numel()), dataType,
                            static_cast<uint32_t>(peer), comm_.get(), launch.stream),
                 "from rank ", peer, " ", describe());
  finish(launch.stream, kWhat);
}

void HcclCommunicator::doSendRecv(std::vector<P2pOp>& ops) {
  static constexpr const char* kWhat = "send/recv";
  if (ops.empty()) return;
  const Launch launch = launchFor(ops.front().tensor, kWhat);
  ScopedDevice device(*api_, launch.device);
  std::vector<at::Tensor> standIns(ops.size());
  std::vector<SendRecvItem> items;
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2pOp& op = ops[i];
    items.push_back(SendRecvItem{op.isSend ? SendRecvType::kSend : SendRecvType::kRecv,
                                 bufferOf(op.tensor, standIns[i]), static_cast<uint64_t>(op.tensor.numel()),
                                 dataTypeFor(op.tensor.scalar_type(), "hccl send/recv tensor"),
                                 static_cast<uint32_t>(op.peer)});
  }
  ATB_HCCL_CHECK(*api_, "HcclBatchSendRecv",
                 api_->batchSendRecv(items.data(), static_cast<uint32_t>(items.size()), comm_.get(), launch.stream),
                 "with ", items.size(), " send/recv items ", describe());
  finish(launch.stream, kWhat);
}

void HcclCommunicator::doBarrier() {
  static constexpr const char* kWhat = "barrier";
  ScopedDevice device(*api_, device_);
  StreamHandle stream = api_->currentStream(device_);
  ATB_HCCL_CHECK(*api_, "HcclBarrier", api_->barrier(comm_.get(), stream), describe());
  // A barrier the host cannot observe would order nothing for the caller: always wait.
  waitForStream(stream, kWhat);
}

void HcclCommunicator::waitForStream(StreamHandle stream, const char* what) {
  ScopedEvent event(*api_);
  ATB_ACL_CHECK(*api_, "aclrtRecordEvent", api_->recordEvent(event.get(), stream), "after hccl ", what, " ",
                describe());
  const auto deadline = Clock::now() + options().timeout.value;
  int polls = 0;
  while (true) {
    bool complete = false;
    ATB_ACL_CHECK(*api_, "aclrtQueryEventStatus", api_->queryEvent(event.get(), &complete), "after hccl ", what, " ",
                  describe());
    if (complete) return;
    // A peer that died or a task that failed never completes the event: HCCL reports it here instead.
    int32_t asyncError = kSuccess;
    ATB_HCCL_CHECK(*api_, "HcclGetCommAsyncError", api_->getCommAsyncError(comm_.get(), &asyncError),
                   "while waiting for ", what, " ", describe());
    if (asyncError != kSuccess) {
      ATB_FAIL(ERROR_HCCL_FAIL, "hccl ", what, " ", describe(), ": HCCL reported asynchronous error ", asyncError, " (",
               resultName(asyncError), ": ", api_->errorString(asyncError), ") during ", what, " after ", polls,
               " polls");
    }
    if (Clock::now() >= deadline) {
      ATB_FAIL(ERROR_COMM_TIMEOUT, "hccl ", what, " ", describe(), " did not complete within ",
               options().timeout.describe(), " and HCCL reported no error; a peer rank may ",
               "not have called it, or called it with counts that do not match");
    }
    ++polls;
    std::this_thread::sleep_for(std::chrono::microseconds(polls < 100 ? 50 : 1000));
  }
}

std::shared_ptr<HcclCommunicator> makeHcclCommunicator(const CommConfig& config, std::shared_ptr<HcclApi> api) {
  return std::make_shared<HcclCommunicator>(config, std::move(api));
}

}  // namespace atb_ops::hccl
