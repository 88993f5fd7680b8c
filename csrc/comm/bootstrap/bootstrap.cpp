#include "comm/bootstrap/bootstrap.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <map>
#include <mutex>

#include "comm/bootstrap/job_scope.h"
#include "comm/bootstrap/node_local_bootstrap.h"
#include "comm/bootstrap/store_bootstrap.h"
#include "core/status.h"

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

c10::intrusive_ptr<c10d::Store> jobStore(const StoreRequest& request) {
  StoreProvider p;
  {
    std::lock_guard<std::mutex> lock(providerMutex());
    p = provider();
  }
  return p ? p(request) : c10::intrusive_ptr<c10d::Store>();
}

std::string jobKeyFor(const CommConfig& c) {
  return c.jobKey.empty() ? defaultJobKey(c.options, c.commMode) : c.jobKey;
}

std::string creationMismatch(const std::string& commDomain, int32_t rootRank, int64_t rootPid, int32_t rootSize,
                             int32_t rank, int64_t pid, int32_t size, int32_t root) {
  const char* field = rootSize != size ? "rankSize" : "rankRoot";
  return c10::str("ranks disagree on the ", field, " of the communicator of commDomain '", commDomain, "': rank ",
                  rootRank, " (pid ", rootPid, ") has rankSize ", rootSize, ", rankRoot ", rootRank, "; rank ", rank,
                  " (pid ", pid, ") has rankSize ", size, ", rankRoot ", root,
                  "; every rank must pass the same rankSize and rankRoot");
}

std::string protocolSettings(const CommConfig& c, const std::string& purpose) {
  // HcclAlltoAllV on one rank and HcclBatchSendRecv on another never match.
  if (purpose == "hccl") return "ATB_OPS_HCCL_ALLTOALLV=" + c.options.hcclAlltoallv;
  // One gloo group on one rank and two levels on another never match (comm/host_span.h).
  if (purpose == "hosts") return std::string("ATB_OPS_TWO_LEVEL=") + (c.options.twoLevel ? "1" : "0");
  // One rank splitting a large message over two connections and its peer expecting it on one never match.
  if (purpose == "gloo") return "ATB_OPS_GLOO_STREAMS=" + std::to_string(c.options.glooStreams);
  // Which messages travel through the segment and who moves a large one's parts: the root's header could carry
  // them to every rank, but a rank whose own setting silently loses is as much a surprise as a wrong result.
  // The folder too: a rank looking for the root's segment in another one took it for a segment on another host.
  if (purpose == "shm") {
    return "ATB_OPS_SHM_EAGER=" + std::to_string(c.options.shmEager) +
           ";ATB_OPS_SHM_SPLIT=" + (c.options.shmSplit ? "1" : "0") + ";ATB_OPS_SHM_DIR=" + c.options.shmDir;
  }
  return "";
}

namespace {

std::map<std::string, std::string> settingsMap(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = std::min(text.find(';', at), text.size());
    const std::string item = text.substr(at, end - at);
    const size_t eq = item.find('=');
    if (eq != std::string::npos) out[item.substr(0, eq)] = item.substr(eq + 1);
    at = end + 1;
  }
  return out;
}

}  // namespace

std::string settingsMismatch(const std::string& commDomain, int32_t rootRank, int64_t rootPid,
                             const std::string& rootSettings, int32_t rank, int64_t pid, const std::string& mine) {
  if (rootSettings == mine) return "";
  const auto theirs = settingsMap(rootSettings);
  const auto ours = settingsMap(mine);
  std::string name = "a wire-protocol setting";
  std::string a = rootSettings;
  std::string b = mine;
  for (const auto& [key, value] : ours) {
    auto it = theirs.find(key);
    const std::string other = it == theirs.end() ? "(unset)" : it->second;
    if (other != value) {
      name = key;
      a = other;
      b = value;
      break;
    }
  }
  return c10::str("ranks disagree on ", name, " for the communicator of commDomain '", commDomain, "': rank ", rootRank,
                  " (pid ", rootPid, ") has '", a, "', rank ", rank, " (pid ", pid, ") has '", b,
                  "'; it changes what goes over the wire, so every rank must set it alike");
}

std::unique_ptr<Bootstrap> makeBootstrap(const CommConfig& c, const std::string& purpose) {
  c10::intrusive_ptr<c10d::Store> store;
  if (c.store) {
    store = c.store->store;  // the caller's own: its keys are the caller's to scope
  } else if (c.bootstrap == BootstrapKind::kAuto) {
    store = jobStore();
  }
  // rankSize and rankRoot are not part of the name: ranks that disagree on them meet, and are told so.
  if (store) {
    // The store belongs to one job already: no job key in its names.
    return makeStoreBootstrap(c, std::move(store), purpose + "/" + c.commDomain, protocolSettings(c, purpose));
  }
  // Only this host's ranks meet node-locally: where the launcher says the others run elsewhere, say at once how
  // ranks on several hosts find each other instead of waiting out the timeout.
  ATB_CHECK(c.commMode == CommMode::MULTI_THREAD || c.options.launcherLocalRanks < 0 ||
                c.options.launcherLocalRanks >= c.rankSize,
            ERROR_INVALID_PARAM, "the communicator of commDomain '", c.commDomain, "' has rankSize ", c.rankSize,
            " but the launcher started only ", c.options.launcherLocalRanks,
            " rank(s) on this host (LOCAL_WORLD_SIZE / OMPI_COMM_WORLD_LOCAL_SIZE), and nothing says how to reach the ",
            "others: ranks on several hosts meet through a rankTableFile (HCCL's rank table), a caller's hcclComm, or ",
            "torch.distributed initialised before the operation (init_process_group)");
  return makeNodeLocalBootstrap(c, purpose + "|" + jobKeyFor(c) + "|" + c.commDomain, purpose,
                                protocolSettings(c, purpose));
}

}  // namespace atb_ops
