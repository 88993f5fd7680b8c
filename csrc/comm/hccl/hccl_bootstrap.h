// How the ranks of one communicator agree on HCCL's root info: rankRoot calls HcclGetRootInfo and every
// other rank receives the same 4108 bytes, through the torch.distributed store when the job has one,
// otherwise through the node-local, job-scoped rendezvous the shm backend uses.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "comm/communicator.h"
#include "comm/hccl/hccl_api.h"

namespace atb_ops::hccl {

// A key-value store that every rank of the job reaches (torch.distributed's default store). Installed
// by the Python binding, because csrc/ does not know Python.
struct StoreHook {
  std::function<bool()> available;  // false now: use the node-local rendezvous
  std::function<void(const std::string& key, const std::string& value)> set;
  // Waits for the key; raises on timeout.
  std::function<std::string(const std::string& key, std::chrono::milliseconds timeout)> get;
};
void setStoreHook(StoreHook hook);

enum class ExchangeChannel { kStore, kNodeLocal };
const char* channelName(ExchangeChannel c);

// rankRoot runs makeAtRoot() and publishes the bytes; every rank returns them. Bounded by ATB_OPS_TIMEOUT,
// raising ERROR_COMM_TIMEOUT that names the root (for a waiting rank) or the ranks that never read (root).
RootInfo exchangeRootInfo(const CommConfig& config, const std::function<RootInfo()>& makeAtRoot,
                          ExchangeChannel* used = nullptr);

}  // namespace atb_ops::hccl
