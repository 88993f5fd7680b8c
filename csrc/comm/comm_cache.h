// Backends register a factory per (name, device type); communicators are handed out from one cache keyed
// by what identifies them, created once even when several threads ask at the same time, evicted when they
// fail (so a new operation gets a fresh one), and never torn down in a fork()ed child.
#pragma once

#include <c10/core/DeviceType.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm_config.h"

namespace atb_ops {

class Communicator;

using CommFactory = std::function<std::shared_ptr<Communicator>(const CommConfig&)>;

// Backends register themselves when their library loads (see each backend's folder).
void registerBackend(const std::string& name, c10::DeviceType device, CommFactory factory);
bool hasBackend(const std::string& name, c10::DeviceType device);
bool hasBackend(const std::string& name);  // for any device
// "shm (cpu)", "gloo (cpu)", ...
std::vector<std::string> registeredBackends();

// A new communicator for `config`, outside the cache (its owner destroys it: HCCL's C API on CPU).
std::shared_ptr<Communicator> createCommunicator(const CommConfig& config);

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
