// The torch.distributed backend "atb_ops" (a c10d::Backend, registered from Python by atb_ops.c10d_backend):
// dist.all_reduce, all_gather(_into_tensor), reduce_scatter(_tensor), broadcast, all_to_all(_single),
// send/recv and barrier on CPU tensors, through an atb_ops communicator of the group's ranks (shm where every rank
// is on this host; across hosts shm within each and gloo between them, so a lost host is named as on every other
// surface). Each method only converts torch's arguments and calls the one body of the collective
// (csrc/framework/collectives.h: its checks, then the Communicator), so what is checked and what goes over the
// wire is the same as for every other surface. Calls complete before they return: the Work handed back is done
// (its future too, which DDP's reducer reads).
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace atb_ops {

class C10dBackend final : public c10d::Backend {
 public:
  // Meets the group's other ranks through `store` (torch's store for this group, already prefixed by the
  // group's name); every later wait for a peer is bounded by `timeout` (init_process_group(timeout=...)).
  C10dBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout,
              const std::string& groupName);

  const std::string getBackendName() const override { return "atb_ops"; }
  // Which atb_ops backend moves the data ("shm"), and the communicator's commDomain (for its stats).
  const std::string& commBackend() const { return comm_->backend(); }
  const std::string& commDomain() const { return domain_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

  // batch_isend_irecv: the sends and receives between start and end run as one group (Communicator::sendRecv),
  // so two ranks may each send to the other first; a lone isend completes only when its peer receives.
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

 private:
  // Runs body(communicator) under `label`, with the GIL released; a failed or timed-out peer becomes
  // DistBackendError. Returns a completed Work whose future holds `outputs`.
  template <typename F>
  c10::intrusive_ptr<c10d::Work> run(const char* label, std::vector<at::Tensor> outputs, F&& body);

  std::string domain_;
  std::shared_ptr<Communicator> comm_;
  // batch_isend_irecv's transfers, queued between startCoalescing and endCoalescing.
  std::mutex pendingMutex_;
  bool coalescing_ = false;
  std::vector<P2pOp> pending_;
};

}  // namespace atb_ops
