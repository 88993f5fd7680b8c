// Communicators named by small integers, so the torch.ops.atb_ops ops take one opaque `comm` argument
// (resolved once per group by the Python package) instead of routing strings. The table owns the
// communicators of its handles until they are released (a group's, at clear_communicators or exit).
#pragma once

#include <cstdint>
#include <memory>

#include "comm/communicator.h"

namespace atb_ops {

// The handle of a communicator (the same one for the same communicator while it has one; never 0).
int64_t handleOf(const std::shared_ptr<Communicator>& comm);

// The communicator of a handle; raises ERROR_COMM_EMPTY for an unknown or released one.
std::shared_ptr<Communicator> communicatorOf(int64_t handle);

// Drops one handle's reference (a group that went); unknown handles are ignored.
void releaseHandle(int64_t handle);

// Drops every handle's reference (its communicator goes once nothing else uses it).
void releaseAllHandles();

}  // namespace atb_ops
