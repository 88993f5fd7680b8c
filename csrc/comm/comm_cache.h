// Communicators are handed out from one cache keyed by what identifies them, created once even when several
// threads ask at the same time, shared while they live (the cache holds them weakly: they go with their last
// user), replaced when they fail, and never torn down in a fork()ed child. Backends: backend_registry.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/backend_registry.h"
#include "comm/comm_config.h"

namespace atb_ops {

class Communicator;

// The communicator for `config`: cached per (backend, device, commDomain, rankSize, rank, hcclComm, job,
// group). A cached one that failed is replaced by a fresh one.
std::shared_ptr<Communicator> acquireCommunicator(const CommConfig& config);

size_t cachedCommunicatorCount();
// The live cached communicators of a commDomain in this process (tests read their stats).
std::vector<std::shared_ptr<Communicator>> liveCommunicators(const std::string& commDomain);
// Forgets every cached communicator (at interpreter exit, and in tests); a fork()ed child leaves the
// inherited ones alone (they belong to the parent). `shutdown`: live ones are shut down first (exit).
void clearCommunicatorCache(bool shutdown = false);

}  // namespace atb_ops
