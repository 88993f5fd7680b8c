// The "nccl" backend: CUDA tensors, NCCL collectives on the current CUDA stream (as ATB runs HCCL on the
// current NPU stream). Calls return once the work is enqueued; barrier() waits for it, with
// ATB_OPS_TIMEOUT. The logic lives in nccl_comm.cpp; this file only binds it to torch's CUDA state.
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <memory>
#include <string>

#include "comm/backend_registry.h"
#include "comm/bootstrap/bootstrap.h"
#include "comm/communicator.h"
#include "comm/nccl/nccl_comm.h"
#include "core/status.h"

namespace atb_ops::nccl {
namespace {

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(const CommConfig& c)
      : Communicator("nccl", c.rank, c.rankSize, c.options),
        device_(static_cast<c10::DeviceIndex>(c.deviceIndex >= 0 ? c.deviceIndex : c10::cuda::current_device())) {
    // NCCL binds a communicator to the device current at its creation.
    c10::cuda::CUDAGuard guard(device_);
    if (c.handle != 0) {
      comm_ = NcclComm::adopt(realNcclApi(), reinterpret_cast<CommHandle>(static_cast<uintptr_t>(c.handle)), c.rank,
                              c.rankSize, c.options.timeout);
    } else {
      auto bootstrap = makeBootstrap(c, "nccl");
      comm_ = NcclComm::create(realNcclApi(), c.rank, c.rankSize, c.rankRoot, *bootstrap, c.options.timeout);
    }
  }

 protected:
  void doAlltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) override {
    Launch l = launch(send, recv);
    comm_->alltoallv(layout, send.data_ptr(), recv.data_ptr(), send.scalar_type(), l.stream.stream());
    l.keep(send, recv);
  }

  void doAllgather(const at::Tensor& send, at::Tensor& recv) override {
    Launch l = launch(send, recv);
    comm_->allgather(send.data_ptr(), recv.data_ptr(), send.numel(), send.scalar_type(), l.stream.stream());
    l.keep(send, recv);
  }

  void doAllreduce(const at::Tensor& send, at::Tensor& recv, ReduceOp op) override {
    if (!ncclReduces(send.scalar_type())) {
      Communicator::doAllreduce(send, recv, op);  // int16, bool: bytes through alltoallv, reduced by ATen
      return;
    }
    Launch l = launch(send, recv);
    comm_->allreduce(send.data_ptr(), recv.data_ptr(), send.numel(), send.scalar_type(), op, l.stream.stream());
    l.keep(send, recv);
  }

  void doReduceScatterV(const at::Tensor& send, const VLayout& s, at::Tensor& recv, ReduceOp op) override {
    bool equal = ncclReduces(send.scalar_type());
    for (int32_t i = 0; i < size() && equal; ++i) {
      equal = s.counts[i] == recv.numel() && s.displs[i] == i * recv.numel();
    }
    if (!equal) {
      Communicator::doReduceScatterV(send, s, recv, op);
      return;
    }
    Launch l = launch(send, recv);
    comm_->reduceScatter(send.data_ptr(), recv.data_ptr(), recv.numel(), send.scalar_type(), op, l.stream.stream());
    l.keep(send, recv);
  }

  void doBroadcast(at::Tensor& tensor, int32_t root) override {
    Launch l = launch(tensor, tensor);
    comm_->broadcast(tensor.data_ptr(), tensor.numel(), tensor.scalar_type(), root, l.stream.stream());
    l.keep(tensor, tensor);
  }

  void doSend(const at::Tensor& tensor, int32_t peer, int32_t /*tag: NCCL has none*/) override {
    std::vector<P2pOp> ops{P2pOp{true, tensor, peer}};
    doSendRecv(ops);
  }

  void doRecv(at::Tensor& tensor, int32_t peer, int32_t /*tag: NCCL has none*/) override {
    std::vector<P2pOp> ops{P2pOp{false, tensor, peer}};
    doSendRecv(ops);
  }

  void doSendRecv(std::vector<P2pOp>& ops) override {
    if (ops.empty()) return;
    Launch l = launch(ops.front().tensor, ops.front().tensor);
    std::vector<NcclComm::Transfer> transfers;
    for (const P2pOp& op : ops) {
      checkOnDevice(op.tensor, op.isSend ? "send tensor" : "recv tensor");
      transfers.push_back({op.isSend, op.tensor.data_ptr(), op.tensor.numel(), op.tensor.scalar_type(), op.peer});
    }
    comm_->sendRecv(transfers, l.stream.stream());
    for (const P2pOp& op : ops) l.keep(op.tensor, op.tensor);
  }

  // NCCL has no barrier: an all-gather of one byte, waited for on the host with a timeout.
  void doBarrier() override {
    c10::cuda::CUDAGuard guard(device_);
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device_);
    const auto options = at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device_);
    at::Tensor one = at::ones({1}, options);
    at::Tensor all = at::zeros({size()}, options);
    comm_->allgather(one.data_ptr(), all.data_ptr(), 1, at::kByte, stream.stream());
    comm_->waitStream(stream.stream(), "barrier");
  }

 private:
  // The current stream of the communicator's device, with that device current for the call.
  struct Launch {
    c10::cuda::CUDAGuard guard;
    c10::cuda::CUDAStream stream;
    // Execute returns before the GPU is done; a tensor allocated on another stream and freed by the caller
    // must not be reused until this stream has read or written it.
    void keep(const at::Tensor& a, const at::Tensor& b) const {
      for (const at::Tensor* t : {&a, &b}) {
        if (t->numel() > 0) c10::cuda::CUDACachingAllocator::recordStream(t->storage().data_ptr(), stream);
      }
    }
  };

  Launch launch(const at::Tensor& in, const at::Tensor& out) const {
    checkOnDevice(in, "input");
    checkOnDevice(out, "output");
    return Launch{c10::cuda::CUDAGuard(device_), c10::cuda::getCurrentCUDAStream(device_)};
  }

  void checkOnDevice(const at::Tensor& t, const char* what) const {
    ATB_CHECK(t.is_cuda() && t.device().index() == device_, ERROR_INVALID_PARAM, "backend 'nccl' rank ", rank(), ": ",
              what, " is on ", t.device(), " but the communicator was created on cuda:", static_cast<int>(device_));
  }

  c10::DeviceIndex device_;
  std::unique_ptr<NcclComm> comm_;
};

const bool registered = [] {
  registerBackend("nccl", c10::DeviceType::CUDA,
                  [](const CommConfig& c) { return std::make_shared<NcclCommunicator>(c); });
  return true;
}();

}  // namespace
}  // namespace atb_ops::nccl
