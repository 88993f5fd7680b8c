// The one interface every backend implements, and the registry/cache that hands communicators out.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/layout.h"
#include "core/params.h"

namespace atb_ops {

// What a backend needs to build (or adopt) a communicator.
struct CommConfig {
  std::string backend;  // the backend that runs it: shm, gloo, nccl, hccl
  int32_t rank = 0;
  int32_t rankSize = 1;
  int32_t rankRoot = 0;
  uint64_t handle = 0;  // hcclComm: a caller-owned vendor communicator, never destroyed by us
  CommMode commMode = CommMode::MULTI_PROCESS;
  std::string rankTableFile;
  std::string commDomain;
  // Scopes the node-local rendezvous to one job; empty: derived from the environment (see README).
  std::string jobKey;
  // c10d group name for the gloo backend; empty: the default group.
  std::string groupName;
  int32_t deviceIndex = -1;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual const std::string& backend() const = 0;
  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;

  // send: contiguous, any shape; recv: contiguous, same dtype and device.
  // The layout has been checked by validateLayout against both tensors before this is called.
  virtual void alltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) = 0;

  // recv holds size() copies of send, in rank order. Default: an alltoallv with allGatherLayout.
  virtual void allgather(const at::Tensor& send, at::Tensor& recv);

  virtual void barrier() = 0;

  // A tensor for this communicator's outputs; backends may place it where their peers reach it faster.
  virtual at::Tensor emptyOutput(c10::IntArrayRef sizes, const at::TensorOptions& options);
};

using CommFactory = std::function<std::shared_ptr<Communicator>(const CommConfig&)>;

// Backends register themselves at load time (see each backend's folder).
void registerBackend(const std::string& name, CommFactory factory);
bool hasBackend(const std::string& name);
std::vector<std::string> registeredBackends();

// Cached per (backend, commDomain, rankSize, rank, handle, groupName, jobKey): a second operation with the
// same param reuses the first one's communicator.
std::shared_ptr<Communicator> getCommunicator(const CommConfig& config);
size_t cachedCommunicatorCount();
// Drops every cached communicator (called at interpreter exit, and by tests).
void clearCommunicatorCache();

// The backend that runs `requested` for tensors on `device`, e.g. "hccl" on a CPU tensor -> "shm"
// with one warning (an error under ATB_OPS_STRICT_BACKEND=1).
std::string resolveBackend(const std::string& requested, c10::DeviceType device);

}  // namespace atb_ops
