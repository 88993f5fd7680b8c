#include "comm/host_span.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <vector>

#include "comm/bootstrap/bootstrap.h"
#include "comm/bootstrap/store_bootstrap.h"
#include "core/host.h"
#include "core/layout.h"
#include "core/status.h"

namespace atb_ops {
namespace {

// Each rank's host by its name (the identity's first part, core/host.h).
std::vector<std::string> hostNames(const std::vector<std::string>& hosts) {
  std::vector<std::string> names;
  for (const std::string& h : hosts) names.push_back(hostNameOf(h));
  return names;
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
            "' are on several: ", formatRanksByLabel(hostNames(hosts)),
            "; use backend 'auto', 'hccl' or 'lccl' (shared memory within a host, gloo between hosts) or 'gloo'");
  // Every rank took part in the census, so every rank decides the same here.
  CommConfig across = c;
  across.backend = "gloo";
  across.rankHosts = hosts;
  return across;
}

}  // namespace atb_ops
