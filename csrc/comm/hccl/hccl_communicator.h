// The "hccl" backend's communicator: HCCL collectives on torch_npu's current stream of the tensor's device,
// all through HcclApi, so this logic is built everywhere, tested through a recording mock, and run with
// real data on CPU ranks over csrc/emulated/hccl/. The NPU build (npu/) and the CPU runner
// (csrc/emulated/atb/hccl_backend/) only supply an HcclApi and register the backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/hccl/hccl_api.h"
#include "comm/hccl/hccl_comm.h"

namespace atb_ops::hccl {

// How alltoallv moves data. HcclAlltoAllV has been reported to return zeros with more than two ranks on
// some CANN 8.3 releases; the pairwise path avoids it with HcclBatchSendRecv.
enum class AlltoallvPath { kAlltoAllV, kBatchSendRecv };

// ATB_OPS_HCCL_ALLTOALLV ("alltoallv" or "p2p", read into Options); every rank must use the same value.
AlltoallvPath alltoallvPath(const Options& options);
const char* pathName(AlltoallvPath p);

// The HcclBatchSendRecv list for this rank: for step s = 1..n-1, a send to (rank+s)%n then a receive from
// (rank-s)%n, the classic pairwise order in which every send has its receive posted in the same step;
// zero-count entries are left out, and the rank's own share is copied locally, not listed.
// sendBase/recvBase are the flattened tensors' first elements; counts and displacements are in elements.
std::vector<SendRecvItem> pairwiseItems(int32_t rank, int32_t size, char* sendBase, char* recvBase, int64_t elemSize,
                                        int32_t dataType, const AllToAllVLayout& layout);

class HcclCommunicator final : public Communicator {
 public:
  HcclCommunicator(const CommConfig& config, std::shared_ptr<HcclApi> api);

  CommHandle handle() const { return comm_.get(); }
  CommOrigin origin() const { return comm_.origin(); }
  int32_t device() const { return device_; }

 protected:
  void doAlltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) override;
  void doAllgather(const at::Tensor& send, at::Tensor& recv) override;
  void doAllgatherv(const at::Tensor& send, const VLayout& recvLayout, at::Tensor& recv) override;
  void doAllreduce(const at::Tensor& send, at::Tensor& recv, ReduceOp op) override;
  void doReduceScatterV(const at::Tensor& send, const VLayout& sendLayout, at::Tensor& recv, ReduceOp op) override;
  void doBroadcast(at::Tensor& tensor, int32_t root) override;
  // HCCL has no tags: `tag` is ignored.
  void doSend(const at::Tensor& tensor, int32_t peer, int32_t tag) override;
  void doRecv(at::Tensor& tensor, int32_t peer, int32_t tag) override;
  void doSendRecv(std::vector<P2pOp>& ops) override;
  void doBarrier() override;

 private:
  // The device a collective on `t` runs on (the tensor's, which must be the communicator's when both are
  // known) and torch_npu's current stream there.
  struct Launch {
    int32_t device;
    StreamHandle stream;
  };
  Launch launchFor(const at::Tensor& t, const char* what) const;
  void alltoallvNative(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv, int32_t dataType,
                       StreamHandle stream);
  void alltoallvPairwise(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv, int32_t dataType,
                         StreamHandle stream);
  // ATB_OPS_HCCL_BLOCKING: wait on the host after each collective.
  void finish(StreamHandle stream, const char* what);
  // Records an event after the enqueued work and polls it and HcclGetCommAsyncError until it completes,
  // a fault is reported (ERROR_HCCL_FAIL) or ATB_OPS_TIMEOUT passes (ERROR_COMM_TIMEOUT).
  void waitForStream(StreamHandle stream, const char* what);
  std::string describe() const;

  std::shared_ptr<HcclApi> api_;
  int32_t device_;
  std::string commDomain_;
  HcclCommRef comm_;
};

// The factory the NPU build and the CPU runner register as backend "hccl", and tests call with a mock.
std::shared_ptr<HcclCommunicator> makeHcclCommunicator(const CommConfig& config, std::shared_ptr<HcclApi> api);

}  // namespace atb_ops::hccl
