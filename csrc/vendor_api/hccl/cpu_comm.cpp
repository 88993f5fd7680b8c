#include "vendor_api/hccl/cpu_comm.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "comm/backend_registry.h"
#include "comm/bootstrap/job_scope.h"
#include "comm/bootstrap/private_dir.h"
#include "core/json_fields.h"
#include "core/status.h"

namespace atb_ops::hccl_cpu {

std::string newRootToken() {
  return randomToken();
}

std::string tokenOf(const char* rootInfo, size_t bytes) {
  const size_t magic = sizeof(kRootInfoMagic);
  if (bytes < magic + 32 || std::memcmp(rootInfo, kRootInfoMagic, magic) != 0) return "";
  std::string token(rootInfo + magic, 32);
  for (char c : token) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return "";
  }
  return token;
}

std::unique_ptr<CpuComm> joinComm(const std::string& domain, uint32_t rank, uint32_t size, bool threads) {
  CommConfig c;
  c.options = readOptions();
  c.backend = "shm";
  c.deviceType = c10::DeviceType::CPU;
  c.rank = static_cast<int32_t>(rank);
  c.rankSize = static_cast<int32_t>(size);
  c.rankRoot = 0;
  c.commMode = threads ? CommMode::MULTI_THREAD : CommMode::MULTI_PROCESS;
  c.commDomain = domain;
  // A root info's token is a nonce: it alone proves who belongs. A rank table's content is shared by every job
  // that reads the file, so there this process's job scope (job_scope.h) joins it, and the census checks it.
  c.jobKey = domain.rfind("table:", 0) == 0 ? "table|" + defaultJobKey(c.options, c.commMode) : "hccl-cpu";
  c.bootstrap = BootstrapKind::kNodeLocal;
  auto made = std::make_unique<CpuComm>();
  made->comm = createCommunicator(c);
  made->rank = rank;
  made->size = size;
  made->name = "atb_ops_hccl_cpu_" + domain.substr(0, 48) + "_" + std::to_string(size);
  return made;
}

uint32_t rankTableSize(const std::string& path, std::string* hash) {
  std::ifstream f(path);
  ATB_CHECK(f.good(), ERROR_INVALID_PARAM, "rank table '", path, "' cannot be read");
  std::stringstream text;
  text << f.rdbuf();
  const nlohmann::json table = parseJsonObject(text.str(), "rank table '" + path + "'");
  ATB_CHECK(table.contains("server_list") && table["server_list"].is_array(), ERROR_INVALID_PARAM, "rank table '", path,
            "' has no server_list array");
  ATB_CHECK(table["server_list"].size() == 1, ERROR_INVALID_PARAM, "rank table '", path, "' lists ",
            table["server_list"].size(), " servers; HCCL on CPU runs the ranks of one host");
  uint32_t ranks = 0;
  for (const auto& server : table["server_list"]) {
    ATB_CHECK(server.contains("device") && server["device"].is_array(), ERROR_INVALID_PARAM, "rank table '", path,
              "': a server has no device array");
    ranks += static_cast<uint32_t>(server["device"].size());
  }
  ATB_CHECK(ranks > 0, ERROR_INVALID_PARAM, "rank table '", path, "' lists no device");
  // The table names the communicator; which job reads it is joinComm's job key.
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv1a(path + "|" + text.str())));
  *hash = hex;
  return ranks;
}

}  // namespace atb_ops::hccl_cpu
