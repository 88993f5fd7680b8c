#include "comm/comm_cache.h"

#include <pthread.h>
#include <unistd.h>

#include <c10/util/StringUtil.h>

#include <future>
#include <map>
#include <mutex>
#include <tuple>

#include "comm/communicator.h"
#include "core/status.h"

namespace atb_ops {
namespace {

using Factories = std::map<std::pair<std::string, c10::DeviceType>, CommFactory>;

std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}

Factories& factories() {
  static Factories f;
  return f;
}

const char* deviceName(c10::DeviceType d) {
  switch (d) {
    case c10::DeviceType::CPU: return "cpu";
    case c10::DeviceType::CUDA: return "cuda";
    case c10::DeviceType::PrivateUse1: return "npu";
    default: return "other";
  }
}

using Key = std::tuple<std::string, int, int32_t, std::string, int32_t, int32_t, uint64_t, std::string, const void*>;

Key keyOf(const CommConfig& c) {
  return Key{
      c.backend, static_cast<int>(c.deviceType), c.deviceIndex, c.commDomain, c.rankSize, c.rank, c.handle, c.jobKey,
      c.groupId};
}

using Pending = std::shared_future<std::shared_ptr<Communicator>>;

struct Cache {
  std::mutex mutex;
  std::map<Key, Pending> entries;
  pid_t owner = ::getpid();
};

Cache& cache() {
  static auto* c = new Cache();  // outlives static teardown: communicators are dropped at Python exit
  return *c;
}

// In a fork()ed child the cached communicators are the parent's: never destroy them here (their
// destructors would close the parent's sockets or unmap what its peers use). They are leaked on purpose.
void forgetInheritedCommunicators() {
  Cache& c = cache();
  if (c.owner == ::getpid()) return;
  auto* leaked = new std::map<Key, Pending>();
  leaked->swap(c.entries);
  c.owner = ::getpid();
}

const bool atforkInstalled = [] {
  // The child runs single-threaded right after fork: take nothing that another thread may have held.
  pthread_atfork(nullptr, nullptr, [] {
    new (&cache().mutex) std::mutex();
    forgetInheritedCommunicators();
  });
  return true;
}();

bool ready(const Pending& p) {
  return p.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

}  // namespace

void registerBackend(const std::string& name, c10::DeviceType device, CommFactory factory) {
  std::lock_guard<std::mutex> lock(registryMutex());
  factories()[{name, device}] = std::move(factory);
}

bool hasBackend(const std::string& name, c10::DeviceType device) {
  std::lock_guard<std::mutex> lock(registryMutex());
  return factories().count({name, device}) > 0;
}

bool hasBackend(const std::string& name) {
  std::lock_guard<std::mutex> lock(registryMutex());
  for (const auto& kv : factories()) {
    if (kv.first.first == name) return true;
  }
  return false;
}

std::vector<std::string> registeredBackends() {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::vector<std::string> names;
  for (const auto& kv : factories()) names.push_back(kv.first.first + " (" + deviceName(kv.first.second) + ")");
  return names;
}

std::shared_ptr<Communicator> createCommunicator(const CommConfig& config) {
  CommFactory factory;
  {
    std::lock_guard<std::mutex> lock(registryMutex());
    auto it = factories().find({config.backend, config.deviceType});
    if (it != factories().end()) factory = it->second;
  }
  ATB_CHECK(factory, ERROR_COMM_EMPTY, "backend '", config.backend, "' for ", deviceName(config.deviceType),
            " tensors is not built into this atb_ops; built: ", c10::Join(", ", registeredBackends()));
  return factory(config);
}

std::shared_ptr<Communicator> acquireCommunicator(const CommConfig& config) {
  (void)atforkInstalled;
  const Key key = keyOf(config);
  Cache& c = cache();
  std::promise<std::shared_ptr<Communicator>> promise;
  Pending pending;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    forgetInheritedCommunicators();
    auto it = c.entries.find(key);
    if (it != c.entries.end()) {
      // A finished creation that failed or whose communicator broke makes way for a fresh one.
      bool stale = false;
      if (ready(it->second)) {
        try {
          stale = it->second.get()->failed();
        } catch (...) {
          stale = true;
        }
      }
      if (!stale) {
        pending = it->second;
      } else {
        c.entries.erase(it);
      }
    }
    if (!pending.valid()) {
      c.entries.emplace(key, promise.get_future().share());
    }
  }
  // Another thread is creating this communicator (or did): wait for it and share it.
  if (pending.valid()) return pending.get();

  try {
    // Created outside every lock: creation waits for peers, and in multi-thread mode the peers are other
    // threads of this process that need the cache too.
    std::shared_ptr<Communicator> comm = createCommunicator(config);
    promise.set_value(comm);
    return comm;
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard<std::mutex> lock(c.mutex);
    c.entries.erase(key);
    throw;
  }
}

size_t cachedCommunicatorCount() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  forgetInheritedCommunicators();
  return c.entries.size();
}

void clearCommunicatorCache() {
  Cache& c = cache();
  std::map<Key, Pending> doomed;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    forgetInheritedCommunicators();
    doomed.swap(c.entries);
  }
}

}  // namespace atb_ops
