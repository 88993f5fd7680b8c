// Communicators named by small integers, so the torch.ops.atb_ops ops take one opaque `comm` argument
// (resolved once per group by the Python package) instead of routing strings.
#pragma once

#include <cstdint>
#include <memory>

#include "comm/communicator.h"

namespace atb_ops {

// The handle of a communicator (the same one for the same communicator; never 0).
int64_t handleOf(const std::shared_ptr<Communicator>& comm);

// The communicator of a handle; raises ERROR_COMM_EMPTY for an unknown one.
std::shared_ptr<Communicator> communicatorOf(int64_t handle);

}  // namespace atb_ops
