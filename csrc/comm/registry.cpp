#include <ATen/ops/empty.h>

#include <map>
#include <mutex>
#include <tuple>

#include <c10/util/Exception.h>

#include "comm/communicator.h"
#include "core/env.h"
#include "core/status.h"

namespace atb_ops {
namespace {

std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, CommFactory>& factories() {
  static std::map<std::string, CommFactory> f;
  return f;
}

using CacheKey = std::tuple<std::string, std::string, int32_t, int32_t, uint64_t, std::string, std::string>;

std::mutex& cacheMutex() {
  static std::mutex m;
  return m;
}

std::map<CacheKey, std::shared_ptr<Communicator>>& cache() {
  static auto* c = new std::map<CacheKey, std::shared_ptr<Communicator>>();  // outlives static teardown
  return *c;
}

const char* deviceName(c10::DeviceType d) {
  switch (d) {
    case c10::DeviceType::CPU: return "cpu";
    case c10::DeviceType::CUDA: return "cuda";
    case c10::DeviceType::PrivateUse1: return "npu";
    default: return "unsupported";
  }
}

std::string nativeBackendFor(c10::DeviceType d) {
  switch (d) {
    case c10::DeviceType::CPU: return "shm";
    case c10::DeviceType::CUDA: return "nccl";
    case c10::DeviceType::PrivateUse1: return "hccl";
    default:
      ATB_FAIL(ERROR_INVALID_PARAM, "tensors on device type ", c10::DeviceTypeName(d),
               " are not supported; use cpu, cuda or npu tensors");
  }
}

}  // namespace

at::Tensor Communicator::emptyOutput(c10::IntArrayRef sizes, const at::TensorOptions& options) {
  return at::empty(sizes, options);
}

void Communicator::allgather(const at::Tensor& send, at::Tensor& recv) {
  alltoallv(send, allGatherLayout(size(), send.numel()), recv);
}

void registerBackend(const std::string& name, CommFactory factory) {
  std::lock_guard<std::mutex> lock(registryMutex());
  factories()[name] = std::move(factory);
}

bool hasBackend(const std::string& name) {
  std::lock_guard<std::mutex> lock(registryMutex());
  return factories().count(name) > 0;
}

std::vector<std::string> registeredBackends() {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::vector<std::string> names;
  for (const auto& kv : factories()) names.push_back(kv.first);
  return names;
}

std::shared_ptr<Communicator> getCommunicator(const CommConfig& c) {
  const CacheKey key{c.backend, c.commDomain, c.rankSize, c.rank, c.handle, c.groupName, c.jobKey};
  {
    std::lock_guard<std::mutex> lock(cacheMutex());
    auto it = cache().find(key);
    if (it != cache().end()) return it->second;
  }
  CommFactory factory;
  {
    std::lock_guard<std::mutex> lock(registryMutex());
    auto it = factories().find(c.backend);
    if (it != factories().end()) factory = it->second;
  }
  ATB_CHECK(factory, ERROR_COMM_EMPTY, "backend '", c.backend,
            "' is not built into this atb_ops; built: ", c10::Join(", ", registeredBackends()));
  // Created outside the lock: creation waits for peers, and in multi-thread mode the peers are
  // other threads of this process that need the cache too.
  std::shared_ptr<Communicator> comm = factory(c);
  std::lock_guard<std::mutex> lock(cacheMutex());
  auto inserted = cache().emplace(key, comm);
  return inserted.first->second;
}

size_t cachedCommunicatorCount() {
  std::lock_guard<std::mutex> lock(cacheMutex());
  return cache().size();
}

void clearCommunicatorCache() {
  std::map<CacheKey, std::shared_ptr<Communicator>> doomed;
  {
    std::lock_guard<std::mutex> lock(cacheMutex());
    doomed.swap(cache());
  }
}

std::string resolveBackend(const std::string& requested, c10::DeviceType device) {
  const std::string native = nativeBackendFor(device);
  if (requested == "auto") return native;
  if (requested == "shm" || requested == "gloo") {
    ATB_CHECK(device == c10::DeviceType::CPU, ERROR_INVALID_PARAM, "backend '", requested,
              "' moves CPU tensors, got a ", deviceName(device), " tensor; use backend 'auto' or '", native, "'");
    return requested;
  }
  if (requested == native && hasBackend(native)) return native;
  if (requested == "hccl" && native != "hccl") {
    ATB_CHECK(!strictBackend(), ERROR_INVALID_PARAM, "backend 'hccl' asked for ", deviceName(device),
              " tensors, and ATB_OPS_STRICT_BACKEND=1 forbids running them on '", native, "'");
    TORCH_WARN_ONCE("atb_ops: backend 'hccl' on ", deviceName(device), " tensors runs on the '", native,
                    "' backend (set ATB_OPS_STRICT_BACKEND=1 to make this an error)");
    return native;
  }
  ATB_FAIL(ERROR_INVALID_PARAM, "backend '", requested, "' cannot move ", deviceName(device),
           " tensors in this build (built backends: ", c10::Join(", ", registeredBackends()), "); use backend 'auto'");
}

}  // namespace atb_ops
