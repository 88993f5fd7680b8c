#include "comm/comm_cache.h"

#include <pthread.h>
#include <unistd.h>

#include <future>
#include <map>
#include <mutex>
#include <tuple>

#include "comm/backend_registry.h"
#include "comm/communicator.h"
#include "core/process.h"
#include "core/status.h"

namespace atb_ops {
namespace {

using Key = std::tuple<std::string, int, int32_t, std::string, int32_t, int32_t, uint64_t, std::string, const void*>;

Key keyOf(const CommConfig& c) {
  return Key{
      c.backend, static_cast<int>(c.deviceType), c.deviceIndex, c.commDomain, c.rankSize, c.rank, c.handle, c.jobKey,
      c.groupId};
}

using Pending = std::shared_future<std::shared_ptr<Communicator>>;

// While a communicator is being created its entry holds the creation's future (other threads wait on it);
// afterwards only a weak reference: the operations, groups and handles that use it own it, and it goes
// with the last of them.
struct Entry {
  Pending pending;
  std::weak_ptr<Communicator> comm;
};

struct Cache {
  std::mutex mutex;
  std::map<Key, Entry> entries;
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
  auto* leaked = new std::map<Key, Entry>();
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

}  // namespace

std::shared_ptr<Communicator> acquireCommunicator(const CommConfig& config) {
  (void)atforkInstalled;
  const Key key = keyOf(config);
  Cache& c = cache();
  std::promise<std::shared_ptr<Communicator>> promise;
  Pending pending;
  std::shared_ptr<Communicator> givenUp;  // a cached one found abandoned by a peer: it makes way for a fresh one
  while (true) {
    std::shared_ptr<Communicator> live;
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      forgetInheritedCommunicators();
      auto it = c.entries.find(key);
      if (it != c.entries.end() && it->second.pending.valid()) {
        pending = it->second.pending;  // another thread is creating it: wait below and share it
      } else if (it != c.entries.end()) {
        // A live, healthy one is shared; a failed one, or one whose last user went, makes way for a fresh one.
        live = it->second.comm.lock();
        if (!live || live->failed() || live == givenUp) {
          c.entries.erase(it);
          live.reset();
        }
      }
      if (!live && !pending.valid()) c.entries[key].pending = promise.get_future().share();
    }
    if (!live) break;
    // Asked outside the lock: for a gloo group it is a store round trip, which other creations must not wait on.
    if (!live->abandonedByPeer()) return live;
    givenUp = std::move(live);
  }
  if (pending.valid()) return pending.get();

  try {
    // Created outside every lock: creation waits for peers, and in multi-thread mode the peers are other
    // threads of this process that need the cache too.
    std::shared_ptr<Communicator> comm = createCommunicator(config);
    promise.set_value(comm);
    std::lock_guard<std::mutex> lock(c.mutex);
    Entry& e = c.entries[key];
    e.pending = Pending();
    e.comm = comm;
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
  size_t live = 0;
  for (const auto& kv : c.entries) live += (kv.second.pending.valid() || !kv.second.comm.expired()) ? 1 : 0;
  return live;
}

std::vector<std::shared_ptr<Communicator>> liveCommunicators(const std::string& commDomain) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  forgetInheritedCommunicators();
  std::vector<std::shared_ptr<Communicator>> live;
  for (const auto& [key, entry] : c.entries) {
    if (std::get<3>(key) != commDomain) continue;
    if (auto comm = entry.comm.lock()) live.push_back(std::move(comm));
  }
  return live;
}

void clearCommunicatorCache(bool shutdown) {
  if (shutdown) markProcessExiting();
  Cache& c = cache();
  std::map<Key, Entry> doomed;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    forgetInheritedCommunicators();
    doomed.swap(c.entries);
  }
  if (!shutdown) return;
  for (auto& [key, entry] : doomed) {
    if (auto comm = entry.comm.lock()) comm->shutdown();
  }
}

}  // namespace atb_ops
