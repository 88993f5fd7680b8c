#include "core/env.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/status.h"

namespace atb_ops {
namespace {

bool flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) != "" && std::string(v) != "0";
}

}  // namespace

std::chrono::milliseconds peerTimeout() {
  const char* v = std::getenv("ATB_OPS_TIMEOUT");
  if (v == nullptr || *v == '\0') return std::chrono::seconds(300);
  char* end = nullptr;
  const double seconds = std::strtod(v, &end);
  ATB_CHECK(end != v && *end == '\0' && seconds > 0, ERROR_INVALID_PARAM,
            "ATB_OPS_TIMEOUT must be a positive number of seconds, got '", v, "'");
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

bool strictBackend() {
  return flag("ATB_OPS_STRICT_BACKEND");
}

bool crossRankCheck(bool backendDefault) {
  const char* v = std::getenv("ATB_OPS_CHECK");
  return (v == nullptr || *v == '\0') ? backendDefault : flag("ATB_OPS_CHECK");
}

int64_t shmEagerLimit() {
  const char* v = std::getenv("ATB_OPS_SHM_EAGER");
  if (v == nullptr || *v == '\0') return 16384;
  char* end = nullptr;
  const long long bytes = std::strtoll(v, &end, 10);
  ATB_CHECK(end != v && *end == '\0' && bytes >= 0 && bytes <= (int64_t{1} << 20), ERROR_INVALID_PARAM,
            "ATB_OPS_SHM_EAGER must be a byte count from 0 to 1048576, got '", v, "'");
  return bytes;
}

bool shmSplit() {
  const char* v = std::getenv("ATB_OPS_SHM_SPLIT");
  return v == nullptr || *v == '\0' || flag("ATB_OPS_SHM_SPLIT");
}

int64_t shmArenaBytes() {
  const char* v = std::getenv("ATB_OPS_SHM_ARENA");
  if (v == nullptr || *v == '\0') {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    const int64_t half = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page / 2 : int64_t{1} << 30;
    return std::min<int64_t>(half, int64_t{64} << 30);
  }
  char* end = nullptr;
  const long long bytes = std::strtoll(v, &end, 10);
  ATB_CHECK(end != v && *end == '\0' && bytes >= 0, ERROR_INVALID_PARAM,
            "ATB_OPS_SHM_ARENA must be a byte count >= 0 (0: off), got '", v, "'");
  return bytes;
}

}  // namespace atb_ops
