// The "nccl" backend: CUDA tensors, grouped ncclSend/ncclRecv on the current CUDA stream (as ATB runs HCCL
// on the current NPU stream). Calls return once the work is enqueued; barrier() waits for it, with
// ATB_OPS_TIMEOUT. The logic lives in nccl_comm.cpp; this file only binds it to torch's CUDA state.
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/nccl/nccl_bootstrap.h"
#include "comm/nccl/nccl_comm.h"
#include "core/env.h"
#include "core/status.h"

namespace atb_ops::nccl {
namespace {

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(const CommConfig& c)
      : device_(static_cast<c10::DeviceIndex>(c.deviceIndex >= 0 ? c.deviceIndex : c10::cuda::current_device())) {
    // NCCL binds a communicator to the device current at its creation.
    c10::cuda::CUDAGuard guard(device_);
    if (c.handle != 0) {
      comm_ = NcclComm::adopt(realNcclApi(), reinterpret_cast<CommHandle>(static_cast<uintptr_t>(c.handle)), c.rank,
                              c.rankSize, peerTimeout());
    } else {
      auto exchange = makeIdExchange(c);
      comm_ = NcclComm::create(realNcclApi(), c.rank, c.rankSize, c.rankRoot, *exchange, peerTimeout());
    }
  }

  const std::string& backend() const override { return backend_; }
  int32_t rank() const override { return comm_->rank(); }
  int32_t size() const override { return comm_->size(); }

  void alltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) override {
    // Device checks: the communicator was made for one GPU, and NCCL reads raw device pointers.
    checkOnDevice(send, "input x");
    checkOnDevice(recv, "output");
    c10::cuda::CUDAGuard guard(device_);
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device_);
    comm_->alltoallv(layout, send.data_ptr(), recv.data_ptr(), send.scalar_type(), stream.stream());
    keepAliveOn(send, stream);
    keepAliveOn(recv, stream);
  }

  void allgather(const at::Tensor& send, at::Tensor& recv) override {
    checkOnDevice(send, "input x");
    checkOnDevice(recv, "output");
    c10::cuda::CUDAGuard guard(device_);
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device_);
    comm_->allgather(send.data_ptr(), recv.data_ptr(), send.numel(), send.scalar_type(), stream.stream());
    keepAliveOn(send, stream);
    keepAliveOn(recv, stream);
  }

  // NCCL has no barrier: an all-gather of one byte, waited for on the host with a timeout.
  void barrier() override {
    c10::cuda::CUDAGuard guard(device_);
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device_);
    const auto options = at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device_);
    at::Tensor one = at::ones({1}, options);
    at::Tensor all = at::zeros({size()}, options);
    comm_->allgather(one.data_ptr(), all.data_ptr(), 1, at::kByte, stream.stream());
    comm_->waitStream(stream.stream(), "barrier");
  }

 private:
  void checkOnDevice(const at::Tensor& t, const char* what) const {
    ATB_CHECK(t.is_cuda() && t.device().index() == device_, ERROR_INVALID_PARAM, "backend 'nccl' rank ", rank(), ": ",
              what, " is on ", t.device(), " but the communicator was created on cuda:", static_cast<int>(device_));
    ATB_CHECK(t.is_contiguous(), ERROR_INVALID_PARAM, "backend 'nccl': ", what, " must be contiguous (strides ",
              t.strides(), ")");
  }

  // Execute returns before the GPU is done; a tensor allocated on another stream and freed by the caller
  // must not be reused until this stream has read or written it.
  static void keepAliveOn(const at::Tensor& t, const c10::cuda::CUDAStream& stream) {
    if (t.numel() > 0) c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), stream);
  }

  std::string backend_ = "nccl";
  c10::DeviceIndex device_;
  std::unique_ptr<NcclComm> comm_;
};

const bool registered = [] {
  registerBackend("nccl", [](const CommConfig& c) { return std::make_shared<NcclCommunicator>(c); });
  return true;
}();

}  // namespace
}  // namespace atb_ops::nccl
