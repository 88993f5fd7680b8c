// The bootstrap over a torch.distributed store (c10d::Store): rankRoot sets a key, the others wait for it
// and count themselves in; the root deletes both keys once all have read.
#pragma once

#include <memory>
#include <string>

#include "comm/bootstrap/bootstrap.h"

namespace atb_ops {

std::unique_ptr<Bootstrap> makeStoreBootstrap(const CommConfig& config, c10::intrusive_ptr<c10d::Store> store,
                                              const std::string& key);

}  // namespace atb_ops
