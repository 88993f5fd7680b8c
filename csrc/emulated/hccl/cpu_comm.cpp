#include "emulated/hccl/cpu_comm.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <vector>

#include "comm/backend_registry.h"
#include "comm/bootstrap/job_scope.h"
#include "comm/bootstrap/private_dir.h"
#include "comm/bootstrap/rank_table.h"
#include "comm/bootstrap/store_bootstrap.h"
#include "comm/bootstrap/tcp_store.h"
#include "core/per_process.h"
#include "core/status.h"

namespace atb_ops::hccl_cpu {
namespace {

// The tokens of the root infos this process made: their keys live under them in the store this process serves
// (processStore), alive until the process ends, since any rank may create (and re-create) the communicator later.
// One server for them all, not one per root info: each would leave a thread and a port behind, and torch's server
// looks up the name of every client that connects (a reverse DNS query, on the thread that serves every client), so
// where DNS is slow each new connection stalled every creation on that server (5 s every ~14 creations on the dev
// VM); the joiners keep one connection to it (joinStore). A child made by fork() starts with none of its parent's.
PerProcess<std::set<std::string>>& madeTokens() {
  static auto* t = new PerProcess<std::set<std::string>>();
  return *t;
}

CommConfig baseConfig(uint32_t rank, uint32_t size) {
  CommConfig c;
  c.options = readOptions();
  c.backend = "shm";
  c.requestedBackend = "hccl";  // HCCL spans hosts: shared memory within one, gloo between (comm/host_span.h)
  c.deviceType = c10::DeviceType::CPU;
  c.rank = static_cast<int32_t>(rank);
  c.rankSize = static_cast<int32_t>(size);
  c.rankRoot = 0;
  return c;
}

std::unique_ptr<CpuComm> made(const CommConfig& c, const std::string& name) {
  auto comm = std::make_unique<CpuComm>();
  comm->comm = createCommunicator(c);
  comm->rank = static_cast<uint32_t>(c.rank);
  comm->size = static_cast<uint32_t>(c.rankSize);
  comm->name = name;
  return comm;
}

}  // namespace

std::string newRootToken() {
  return randomToken();
}

std::string makeRootInfo(size_t capacity) {
  const std::string token = randomToken();
  uint16_t port = 0;
  processStore(readOptions().timeout.value, &port);
  madeTokens().with([&](std::set<std::string>& tokens) { tokens.insert(token); });
  const std::string text =
      std::string(kRootInfoMagic) + "|" + token + "|" + reachableAddress() + "|" + std::to_string(port);
  ATB_CHECK(text.size() < capacity, ERROR_INTERNAL_ERROR, "HcclGetRootInfo: ", text.size(),
            " bytes do not fit the root info's ", capacity);
  return text;
}

RootInfo parseRootInfo(const char* bytes, size_t size) {
  const std::string text(bytes, strnlen(bytes, size));
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, '|');) parts.push_back(part);
  RootInfo info;
  if (parts.size() != 4 || parts[0] != kRootInfoMagic || parts[1].size() != 32 || parts[2].empty()) return info;
  for (char c : parts[1]) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return info;
  }
  char* end = nullptr;
  const long port = std::strtol(parts[3].c_str(), &end, 10);
  if (end == parts[3].c_str() || *end != '\0' || port <= 0 || port > 65535) return info;
  info.token = parts[1];
  info.address = parts[2];
  info.port = static_cast<uint16_t>(port);
  return info;
}

std::unique_ptr<CpuComm> joinRootInfo(const RootInfo& info, uint32_t rank, uint32_t size) {
  CommConfig c = baseConfig(rank, size);
  c.commDomain = "root:" + info.token;
  c.jobKey = "hccl-cpu";  // the token proves who belongs
  const bool ours = madeTokens().with([&](std::set<std::string>& tokens) { return tokens.count(info.token) > 0; });
  uint16_t port = 0;
  c10::intrusive_ptr<c10d::Store> store =
      ours ? processStore(c.options.timeout.value, &port) : joinStore(info.address, info.port, c.options.timeout);
  c.store =
      std::make_shared<GivenStore>(GivenStore{c10::make_intrusive<c10d::PrefixStore>("hccl/" + info.token, store)});
  return made(c, "atb_ops_hccl_cpu_" + info.token.substr(0, 16) + "_" + std::to_string(size));
}

std::unique_ptr<CpuComm> joinRankTable(const std::string& path, uint32_t rank) {
  const RankTable table = readRankTable(path);
  ATB_CHECK(rank < table.size, ERROR_INVALID_PARAM, "rank ", rank, " is not in rank table '", path, "' of ", table.size,
            " ranks");
  CommConfig c = baseConfig(rank, table.size);
  c.commDomain = "table:" + table.hash;
  if (c10::intrusive_ptr<c10d::Store> store = rankTableStore(table, rank, c.options)) {
    c.store = std::make_shared<GivenStore>(GivenStore{store});
  } else {
    // One server: its ranks meet node-locally. The table's file is shared by every job that reads it, so this
    // process's job scope joins it, and the census checks a parent-scoped guess (job_census.h).
    c.jobKey = "table|" + defaultJobKey(c.options, c.commMode);
    c.bootstrap = BootstrapKind::kNodeLocal;
  }
  return made(c, "atb_ops_hccl_cpu_table_" + table.hash + "_" + std::to_string(table.size));
}

std::unique_ptr<CpuComm> joinThreads(const std::string& domain, uint32_t rank, uint32_t size) {
  CommConfig c = baseConfig(rank, size);
  c.commMode = CommMode::MULTI_THREAD;
  c.commDomain = domain;
  c.jobKey = "hccl-cpu";
  c.bootstrap = BootstrapKind::kNodeLocal;
  return made(c, "atb_ops_hccl_cpu_" + domain.substr(0, 48) + "_" + std::to_string(size));
}

}  // namespace atb_ops::hccl_cpu
