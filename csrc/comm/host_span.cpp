#include "comm/host_span.h"

#include <c10/util/StringUtil.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <vector>

#include "comm/bootstrap/bootstrap.h"
#include "comm/bootstrap/store_bootstrap.h"
#include "core/layout.h"
#include "core/status.h"

namespace atb_ops {
namespace {

// "ranks 0-1 on 'h0', ranks 2-3 on 'h1'": each host by its name (the identity's first part), with its ranks.
std::string describeHosts(const std::vector<std::string>& hosts) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> groups;
  for (size_t r = 0; r < hosts.size(); ++r) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == hosts[r]; });
    if (it == groups.end()) {
      groups.push_back({hosts[r], {static_cast<int64_t>(r)}});
    } else {
      it->second.push_back(static_cast<int64_t>(r));
    }
  }
  std::string out;
  for (const auto& [host, ranks] : groups) {
    if (!out.empty()) out += ", ";
    out +=
        (ranks.size() == 1 ? "rank " : "ranks ") + formatRanks(ranks) + " on '" + host.substr(0, host.find('/')) + "'";
  }
  return out;
}

}  // namespace

CommConfig placeAcrossHosts(const CommConfig& c) {
  if (c.backend != "shm" || c.rankSize <= 1 || c.hostsChecked) return c;
  // Only a store reaches other hosts: ranks that meet node-locally are on this one by construction.
  const bool viaStore = c.store ? true : c.bootstrap == BootstrapKind::kAuto && jobStore();
  if (!viaStore) return c;
  const std::unique_ptr<Bootstrap> census = makeBootstrap(c, "hosts");
  census->broadcast(c.rank == c.rankRoot ? "hosts" : "");
  const std::vector<std::string> hosts = census->rankHosts();
  if (std::all_of(hosts.begin(), hosts.end(), [&](const std::string& h) { return h == hosts[0]; })) return c;
  ATB_CHECK(c.requestedBackend != "shm", ERROR_INVALID_PARAM, "backend 'shm' moves data through the shared memory of ",
            "one host, but the ", c.rankSize, " ranks of commDomain '", c.commDomain,
            "' are on several: ", describeHosts(hosts),
            "; use backend 'auto', 'hccl' or 'lccl' (shared memory within a host, gloo ", "between hosts) or 'gloo'");
  CommConfig across = c;
  across.backend = "gloo";
  return across;
}

}  // namespace atb_ops
