#include "comm/bootstrap/bootstrap.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <map>
#include <mutex>

#include "comm/bootstrap/job_scope.h"
#include "comm/bootstrap/node_local_bootstrap.h"
#include "comm/bootstrap/store_bootstrap.h"

namespace atb_ops {
namespace {

std::mutex& providerMutex() {
  static std::mutex m;
  return m;
}

StoreProvider& provider() {
  static auto* p = new StoreProvider();  // outlives static teardown, like the communicator cache
  return *p;
}

}  // namespace

void setStoreProvider(StoreProvider p) {
  std::lock_guard<std::mutex> lock(providerMutex());
  provider() = std::move(p);
}

c10::intrusive_ptr<c10d::Store> jobStore(bool required) {
  StoreProvider p;
  {
    std::lock_guard<std::mutex> lock(providerMutex());
    p = provider();
  }
  return p ? p(required) : c10::intrusive_ptr<c10d::Store>();
}

std::string jobKeyFor(const CommConfig& c) {
  return c.jobKey.empty() ? defaultJobKey(c.options, c.commMode) : c.jobKey;
}

uint64_t nextGeneration(const std::string& scope, int32_t rank) {
  static std::mutex m;
  static std::map<std::pair<std::string, int32_t>, uint64_t> generations;
  std::lock_guard<std::mutex> lock(m);
  return generations[{scope, rank}]++;
}

std::unique_ptr<Bootstrap> makeBootstrap(const CommConfig& c, const std::string& purpose) {
  c10::intrusive_ptr<c10d::Store> store;
  if (c.bootstrap == BootstrapKind::kAuto) store = jobStore(/*required=*/false);
  if (store) {
    // The store belongs to one job already: no job key in its names.
    const std::string scope =
        purpose + "/" + c.commDomain + "/" + std::to_string(c.rankSize) + "/" + std::to_string(c.rankRoot);
    return makeStoreBootstrap(c, std::move(store), scope + "/" + std::to_string(nextGeneration(scope, c.rank)));
  }
  const std::string scope = purpose + "|" + jobKeyFor(c) + "|" + c.commDomain + "|" + std::to_string(c.rankSize) + "|" +
                            std::to_string(c.rankRoot);
  return makeNodeLocalBootstrap(c, scope + "|" + std::to_string(nextGeneration(scope, c.rank)));
}

}  // namespace atb_ops
