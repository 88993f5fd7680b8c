// The "gloo" backend: any torch.distributed ProcessGroup (gloo for CPU tensors; reaches other hosts).
// Data moves as bytes, so every dtype works (gloo has no int16) and displacements are honoured by
// packing into / unpacking from staging buffers only when they are not already packed.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <functional>
#include <string>

#include "comm/communicator.h"

namespace atb_ops::c10dcomm {

// Maps a config to the name of a registered c10d group (making the group if need be). Installed by
// the Python binding, which knows torch.distributed; without one, the config's groupName (or "0",
// the default group's name) is resolved directly.
using GroupResolver = std::function<std::string(const CommConfig&)>;
void setGroupResolver(GroupResolver resolver);

class C10dCommunicator final : public Communicator {
 public:
  explicit C10dCommunicator(const CommConfig& config);

  const std::string& backend() const override { return backend_; }
  int32_t rank() const override { return pg_->getRank(); }
  int32_t size() const override { return pg_->getSize(); }

  void alltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) override;
  void allgather(const at::Tensor& send, at::Tensor& recv) override;
  void barrier() override;

 private:
  void waitFor(const c10::intrusive_ptr<c10d::Work>& work, const char* what) const;
  // ATB_OPS_CHECK=1: every rank learns every rank's counts and dtype before any data moves.
  void crossCheck(const at::Tensor& send, const AllToAllVLayout& layout) const;
  // Ranks on this host whose process has exited, for error messages ("" when none is known dead).
  std::string deadPeers() const;

  std::string backend_ = "gloo";
  std::string groupName_;
  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  std::vector<int64_t> peerHosts_;  // per rank: a hash of its host's boot id (pids compare only within a host)
  std::vector<int64_t> peerPids_;
};

}  // namespace atb_ops::c10dcomm
