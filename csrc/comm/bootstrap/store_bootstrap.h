// The bootstrap over a torch.distributed store (c10d::Store): rankRoot sets a key (its rankSize, rankRoot and
// pid, then the payload), the others wait for it, check the root's view against their own and count
// themselves in; a rank that disagrees sets a conflict key the root watches. The root deletes the keys once
// all have read, or once it failed.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <memory>
#include <string>

#include "comm/bootstrap/bootstrap.h"

namespace atb_ops {

// CommConfig::store: the store a caller was handed for one communicator (torch's, for one process group).
struct GivenStore {
  c10::intrusive_ptr<c10d::Store> store;
};

std::unique_ptr<Bootstrap> makeStoreBootstrap(const CommConfig& config, c10::intrusive_ptr<c10d::Store> store,
                                              const std::string& key, const std::string& settings);

}  // namespace atb_ops
