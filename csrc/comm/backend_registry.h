// Which backends this build has: each registers a factory per (name, device type) when its library loads,
// and createCommunicator builds one from a config. The cache of live communicators is comm_cache.h.
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

void registerBackend(const std::string& name, c10::DeviceType device, CommFactory factory);
bool hasBackend(const std::string& name, c10::DeviceType device);
bool hasBackend(const std::string& name);  // for any device
// "shm (cpu)", "gloo (cpu)", ...
std::vector<std::string> registeredBackends();

// A new communicator for `config`, outside the cache (its owner destroys it: HCCL's C API on CPU). Its last
// user in a fork()ed child leaks it instead of tearing down what the parent still uses.
std::shared_ptr<Communicator> createCommunicator(const CommConfig& config);

}  // namespace atb_ops
