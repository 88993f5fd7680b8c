// The "hccl" backend's communicator: HcclAlltoAllV / HcclAllGather on torch_npu's current stream of the
// tensor's device, all through HcclApi, so this logic is built and mock-tested everywhere. The NPU build
// (npu/) only supplies the real HcclApi and registers the backend.
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

// ATB_OPS_HCCL_ALLTOALLV: unset, "alltoallv" or "native" -> HcclAlltoAllV; "p2p" or "batch_send_recv" ->
// HcclBatchSendRecv. Anything else raises ERROR_INVALID_PARAM. Every rank must use the same value.
AlltoallvPath alltoallvPathFromEnv();
const char* pathName(AlltoallvPath p);

// ATB_OPS_HCCL_BLOCKING=1: after each collective, wait on the host for the stream (polling
// HcclGetCommAsyncError, bounded by ATB_OPS_TIMEOUT), so a fault raises here instead of hanging a later
// synchronize. Off by default: ATB returns as soon as the collective is enqueued.
bool blockingFromEnv();

// The HcclBatchSendRecv list for this rank: for step s = 1..n-1, a send to (rank+s)%n then a receive from
// (rank-s)%n, the classic pairwise order in which every send has its receive posted in the same step;
// zero-count entries are left out, and the rank's own share is copied locally, not listed.
// sendBase/recvBase are the flattened tensors' first elements; counts and displacements are in elements.
std::vector<SendRecvItem> pairwiseItems(int32_t rank, int32_t size, char* sendBase, char* recvBase, int64_t elemSize,
                                        int32_t dataType, const AllToAllVLayout& layout);

class HcclCommunicator final : public Communicator {
 public:
  HcclCommunicator(const CommConfig& config, std::shared_ptr<HcclApi> api);

  const std::string& backend() const override { return backend_; }
  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }

  void alltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) override;
  void allgather(const at::Tensor& send, at::Tensor& recv) override;
  void barrier() override;

  CommHandle handle() const { return comm_.get(); }
  CommOrigin origin() const { return comm_.origin(); }
  int32_t device() const { return device_; }

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
  // Records an event after the enqueued work and polls it and HcclGetCommAsyncError until it completes,
  // a fault is reported (ERROR_HCCL_FAIL) or ATB_OPS_TIMEOUT passes (ERROR_COMM_TIMEOUT).
  void waitForStream(StreamHandle stream, const char* what);
  void checkUsable(const char* what) const;
  std::string describe() const;

  std::string backend_ = "hccl";
  std::shared_ptr<HcclApi> api_;
  int32_t rank_;
  int32_t size_;
  int32_t device_;
  std::string commDomain_;
  HcclCommRef comm_;
  std::string brokenBy_;  // a fault HCCL reported; the communicator is unusable after it
};

// The factory the NPU build registers as backend "hccl" (with the real HcclApi), and tests call with a mock.
std::shared_ptr<HcclCommunicator> makeHcclCommunicator(const CommConfig& config, std::shared_ptr<HcclApi> api);

}  // namespace atb_ops::hccl
