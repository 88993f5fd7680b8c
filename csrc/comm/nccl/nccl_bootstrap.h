// How rankRoot's ncclUniqueId reaches the other ranks: through the torch.distributed store when the
// Python package installed one (a default process group exists), else through a node-local file.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "comm/communicator.h"
#include "comm/nccl/nccl_comm.h"

namespace atb_ops::nccl {

// Installed by atb_ops/_nccl_bootstrap.py. `available` says whether a store is reachable now; `set`
// stores a value; `get` waits up to `timeoutSeconds` for a key and returns its value (raising on timeout).
struct StoreHooks {
  std::function<bool()> available;
  std::function<void(const std::string& key, const std::string& value)> set;
  std::function<std::string(const std::string& key, double timeoutSeconds)> get;
};
void setStoreHooks(std::optional<StoreHooks> hooks);

// The exchange for a communicator being created from `config`: the store when available, else the file.
// Each call advances a per-(job, commDomain, rankSize, rank) generation, so the ranks' Nth communicator
// with one name meets the others' Nth and never a stale id from the (N-1)th.
std::unique_ptr<UniqueIdExchange> makeIdExchange(const CommConfig& config);

// The node-local exchange alone (tests use it directly): /dev/shm/atb_ops.<uid>.rdv.<hash of job, commDomain,
// rankSize, rankRoot, generation>, written by the root, read by the others while the root lives, removed by
// the root once every rank has joined.
std::unique_ptr<UniqueIdExchange> makeFileIdExchange(const CommConfig& config);

}  // namespace atb_ops::nccl
