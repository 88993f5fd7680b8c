#include "comm/bootstrap/rank_table.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

#include "comm/bootstrap/job_scope.h"
#include "comm/bootstrap/tcp_store.h"
#include "core/json_fields.h"
#include "core/layout.h"
#include "core/per_process.h"
#include "core/status.h"

namespace atb_ops {
namespace {

// HCCL writes its numbers as strings ("0"); integers are accepted too.
int64_t number(const nlohmann::json& v, const std::string& what) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    char* end = nullptr;
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end != nullptr && *end == '\0') return n;
  }
  ATB_FAIL(ERROR_INVALID_PARAM, what, " is ", v.dump(), ", not an integer");
}

std::string text(const nlohmann::json& server, const char* key) {
  return server.contains(key) && server[key].is_string() ? server[key].get<std::string>() : "";
}

}  // namespace

RankTable readRankTable(const std::string& path) {
  std::ifstream f(path);
  ATB_CHECK(f.good(), ERROR_INVALID_PARAM, "rank table '", path, "' cannot be read");
  std::stringstream content;
  content << f.rdbuf();
  const std::string where = "rank table '" + path + "'";
  const nlohmann::json table = parseJsonObject(content.str(), where);
  ATB_CHECK(table.contains("server_list") && table["server_list"].is_array() && !table["server_list"].empty(),
            ERROR_INVALID_PARAM, where, " has no server_list array of servers");
  const auto& servers = table["server_list"];
  if (table.contains("server_count")) {
    const int64_t count = number(table["server_count"], where + " server_count");
    ATB_CHECK(count == static_cast<int64_t>(servers.size()), ERROR_INVALID_PARAM, where, " says server_count ", count,
              " but its server_list lists ", servers.size(), " server(s)");
  }
  RankTable t;
  t.path = path;
  std::map<int64_t, std::string> owner;  // rank_id -> the server listing it
  std::vector<std::string> problems;
  for (size_t s = 0; s < servers.size(); ++s) {
    const auto& server = servers[s];
    ATB_CHECK(server.is_object() && server.contains("device") && server["device"].is_array(), ERROR_INVALID_PARAM,
              where, ": server ", s, " has no device array");
    RankTable::Server entry;
    entry.address = text(server, "host_ip");
    if (entry.address.empty()) entry.address = text(server, "server_id");
    const std::string name = entry.address.empty() ? "server " + std::to_string(s) : "server '" + entry.address + "'";
    for (const auto& device : server["device"]) {
      ATB_CHECK(device.is_object() && device.contains("rank_id"), ERROR_INVALID_PARAM, where, ": a device of ", name,
                " has no rank_id");
      const int64_t id = number(device["rank_id"], where + " rank_id");
      if (auto it = owner.find(id); it != owner.end()) {
        problems.push_back(c10::str("rank_id ", id, " is listed twice (", it->second, " and ", name, ")"));
      } else {
        owner[id] = name;
      }
      entry.ranks.push_back(static_cast<uint32_t>(std::max<int64_t>(id, 0)));
    }
    t.servers.push_back(std::move(entry));
  }
  const auto total =
      static_cast<int64_t>(std::accumulate(t.servers.begin(), t.servers.end(), size_t{0},
                                           [](size_t n, const RankTable::Server& s) { return n + s.ranks.size(); }));
  ATB_CHECK(total > 0, ERROR_INVALID_PARAM, where, " lists no device");
  std::vector<int64_t> missing;
  for (int64_t r = 0; r < total; ++r) {
    if (owner.count(r) == 0) missing.push_back(r);
  }
  for (const auto& [id, name] : owner) {
    if (id < 0 || id >= total) {
      problems.push_back(c10::str("rank_id ", id, " (", name, ") is out of range for ", total, " devices"));
    }
  }
  if (!missing.empty() && problems.size() < 4) problems.push_back("rank(s) " + formatRanks(missing) + " are missing");
  ATB_CHECK(problems.empty(), ERROR_INVALID_PARAM, where, ": ", c10::Join("; ", problems));
  t.size = static_cast<uint32_t>(total);
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv1a(path + "|" + content.str())));
  t.hash = hex;
  return t;
}

c10::intrusive_ptr<c10d::Store> rankTableStore(const RankTable& t, uint32_t rank, const Options& options) {
  if (t.servers.size() < 2) return {};
  const RankTable::Server& first = t.servers.front();
  ATB_CHECK(!first.address.empty(), ERROR_INVALID_PARAM, "rank table '", t.path,
            "' lists several servers, but its first names no host_ip or server_id to meet at");
  const uint32_t host = *std::min_element(first.ranks.begin(), first.ranks.end());
  // One server per table and process: a second communicator of the same table shares it. A child made by fork()
  // serves its own (or, while its parent holds the port, is told the port is in use), never through its parent's.
  using Served = std::map<std::string, c10::intrusive_ptr<c10d::Store>>;  // by table hash
  static auto* served = new PerProcess<Served>();
  c10::intrusive_ptr<c10d::Store> base = served->with([&](Served& byHash) {
    auto it = byHash.find(t.hash);
    if (it != byHash.end()) return it->second;
    if (rank != host) return c10::intrusive_ptr<c10d::Store>();
    return byHash[t.hash] = serveStore(static_cast<uint16_t>(options.rankTablePort), options.timeout.value, nullptr);
  });
  if (!base) base = joinStore(first.address, static_cast<uint16_t>(options.rankTablePort), options.timeout);
  return c10::make_intrusive<c10d::PrefixStore>("atb_ops/table/" + t.hash, base);
}

}  // namespace atb_ops
