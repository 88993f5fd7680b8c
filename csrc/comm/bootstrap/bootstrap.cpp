#include "comm/bootstrap/bootstrap.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
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

namespace {

std::mutex& generationMutex() {
  static std::mutex m;
  return m;
}

std::map<std::pair<std::string, int32_t>, uint64_t>& generations() {
  static auto* g = new std::map<std::pair<std::string, int32_t>, uint64_t>();
  return *g;
}

}  // namespace

Generation::Generation(std::string scope, int32_t rank) : scope_(std::move(scope)), rank_(rank) {
  std::lock_guard<std::mutex> lock(generationMutex());
  number_ = generations()[{scope_, rank_}];
}

void Generation::confirm() {
  std::lock_guard<std::mutex> lock(generationMutex());
  uint64_t& next = generations()[{scope_, rank_}];
  next = std::max(next, number_ + 1);
}

std::string creationMismatch(const std::string& commDomain, int32_t rootRank, int64_t rootPid, int32_t rootSize,
                             int32_t rank, int64_t pid, int32_t size, int32_t root) {
  const char* field = rootSize != size ? "rankSize" : "rankRoot";
  return c10::str("ranks disagree on the ", field, " of the communicator of commDomain '", commDomain, "': rank ",
                  rootRank, " (pid ", rootPid, ") has rankSize ", rootSize, ", rankRoot ", rootRank, "; rank ", rank,
                  " (pid ", pid, ") has rankSize ", size, ", rankRoot ", root,
                  "; every rank must pass the same rankSize and rankRoot");
}

std::unique_ptr<Bootstrap> makeBootstrap(const CommConfig& c, const std::string& purpose) {
  c10::intrusive_ptr<c10d::Store> store;
  if (c.store) {
    store = c.store->store;  // the caller's own: its keys are the caller's to scope
  } else if (c.bootstrap == BootstrapKind::kAuto) {
    store = jobStore(/*required=*/false);
  }
  // rankSize and rankRoot are not part of the name: ranks that disagree on them meet, and are told so.
  if (store) {
    // The store belongs to one job already: no job key in its names.
    Generation g(purpose + "/" + c.commDomain, c.rank);
    const std::string key = purpose + "/" + c.commDomain + "/" + std::to_string(g.number());
    return makeStoreBootstrap(c, std::move(store), key, std::move(g));
  }
  const std::string scope = purpose + "|" + jobKeyFor(c) + "|" + c.commDomain;
  Generation g(scope, c.rank);
  const std::string key = scope + "|" + std::to_string(g.number());
  return makeNodeLocalBootstrap(c, key, std::move(g));
}

}  // namespace atb_ops
