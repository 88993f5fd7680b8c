// What a backend needs to build (or adopt) a communicator, built in ONE place from whatever asks: an ATB
// param (csrc/ops), a torch op or binding over a torch.distributed group (op_plugin), HCCL's C API on CPU
// (csrc/emulated/hccl/). Backend choice, with the hccl/lccl fallback policy, is decided here too.
#pragma once

#include <c10/core/Device.h>
#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/options.h"
#include "core/params.h"

namespace c10d {
class ProcessGroup;
}

namespace atb_ops {

// A torch.distributed group the caller already has (defined in comm/gloo/, the only user).
struct ExistingGroup;
// A store handed to the caller for this communicator alone (defined in comm/bootstrap/store_bootstrap.h).
struct GivenStore;

// How the ranks of a new communicator exchange their setup bytes (comm/bootstrap/).
enum class BootstrapKind {
  kAuto,       // the torch.distributed store when one exists, else the node-local rendezvous
  kNodeLocal,  // the node-local rendezvous only (HCCL's C API on CPU: no Python, no store)
};

struct CommConfig {
  std::string backend;           // resolved: shm, gloo, nccl, hccl
  std::string requestedBackend;  // as asked for: "shm" by name is one host only; "auto", "hccl", "lccl" span hosts
  c10::DeviceType deviceType = c10::DeviceType::CPU;
  int32_t deviceIndex = -1;
  int32_t rank = 0;
  int32_t rankSize = 1;
  int32_t rankRoot = 0;
  uint64_t handle = 0;  // hcclComm: a caller-owned vendor communicator, never destroyed by us
  CommMode commMode = CommMode::MULTI_PROCESS;
  std::string rankTableFile;
  std::string commDomain;
  // Scopes the node-local rendezvous; empty: the job of this process (comm/bootstrap/job_scope.h).
  std::string jobKey;
  BootstrapKind bootstrap = BootstrapKind::kAuto;
  // The caller already knows every rank is on this host (a torch.distributed group whose hosts were compared):
  // no host census at creation (host_span.h).
  bool hostsChecked = false;
  // Set by placeAcrossHosts (host_span.h) when the ranks span hosts: every rank's host identity, in rank order.
  std::vector<std::string> rankHosts;
  // Where this communicator is a part of another (two levels): the whole one's number of each of its ranks, by which
  // its messages name peers. Empty: its own numbers.
  std::vector<int32_t> wholeRanks;
  // Ranks of the whole communicator this one is part of that run on this kernel, when more than rankSize: hosts
  // that are containers or network namespaces of one machine share its cores, so shm waits yield rather than
  // spin when these outnumber them. 0: rankSize.
  int32_t kernelRanks = 0;
  // backend "gloo" over an existing torch.distributed group (atb_ops.distributed): the group itself, and
  // its identity for the communicator cache.
  std::shared_ptr<ExistingGroup> group;
  const void* groupId = nullptr;
  // When set, the bootstrap meets through this store instead of the job's (a c10d backend's creator gets one
  // per process group, already prefixed by the group's name, so groups never meet each other's keys).
  std::shared_ptr<GivenStore> store;
  Options options;  // the environment when this config was made
};

// The backend that runs `requested` for tensors on `device`:
//   auto        -> the device's own: shm (CPU), nccl (CUDA), hccl (NPU);
//   shm, gloo   -> CPU tensors only; nccl -> CUDA only;
//   hccl, lccl  -> hccl where a backend "hccl" serves this device (an NPU, or HCCL's API on CPU under the
//                  emulation), else the device's own with one warning (an error under ATB_OPS_STRICT_BACKEND).
std::string resolveBackend(const std::string& requested, const c10::Device& device, const Options& options);

// ATB_OPS_STRICT_BACKEND at set_param time, before any tensor is seen: "hccl"/"lccl" with no HCCL backend
// built for any device is an error there (as ATB would fail to create the operation).
void checkBackendAvailable(const std::string& requested, const Options& options, const std::string& opName);

// The config an ATB operation's param asks for, for tensors on `device`.
CommConfig configFromParam(const CommParam& param, const c10::Device& device);

// The config of a torch.distributed group's collectives (atb_ops.distributed): `backend` ("shm", "gloo",
// "auto", ...) for tensors on `device`; `group` is the group itself for backend "gloo", else null; the shm
// rendezvous is scoped by `jobKey` and named by `commDomain`. `rankHosts`: every rank's host identity where the
// caller compared them and the group spans hosts (backend "gloo"): then it runs in two levels where the hosts
// hold the same number of ranks (the group itself carries what runs among all ranks); empty: one host, or flat.
CommConfig configForGroup(const std::string& backend, int32_t rank, int32_t size, const std::string& commDomain,
                          const std::string& jobKey, const c10::Device& device,
                          c10::intrusive_ptr<c10d::ProcessGroup> group, const std::vector<std::string>& rankHosts = {});

}  // namespace atb_ops
