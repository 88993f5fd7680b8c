#include "core/params.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace atb_ops {
namespace {

using nlohmann::json;

json parseObject(const std::string& text, const std::string& opName) {
  json parsed;
  try {
    parsed = json::parse(text);
  } catch (const json::parse_error& e) {
    ATB_FAIL(ERROR_INVALID_PARAM, opName, " param is not valid JSON (", e.what(), "): '", text, "'");
  }
  ATB_CHECK(parsed.is_object(), ERROR_INVALID_PARAM, opName, " param must be a JSON object, got '", text, "'");
  return parsed;
}

int32_t readInt32(const json& v, const char* key, const std::string& opName) {
  ATB_CHECK(v.is_number_integer(), ERROR_INVALID_PARAM, opName, " param '", key, "' must be an integer, got ",
            v.dump());
  const int64_t x = v.get<int64_t>();
  ATB_CHECK(x >= INT32_MIN && x <= INT32_MAX, ERROR_INVALID_PARAM, opName, " param '", key,
            "' does not fit in int32, got ", x);
  return static_cast<int32_t>(x);
}

std::string readString(const json& v, const char* key, const std::string& opName) {
  ATB_CHECK(v.is_string(), ERROR_INVALID_PARAM, opName, " param '", key, "' must be a string, got ", v.dump());
  return v.get<std::string>();
}

bool fileExists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

bool isKnownBackend(const std::string& backend) {
  return backend == "hccl" || backend == "nccl" || backend == "shm" || backend == "gloo" || backend == "auto";
}

CommParam parseCommParam(const std::string& text, const std::string& opName) {
  const json obj = parseObject(text, opName);
  CommParam p;
  for (const auto& [key, value] : obj.items()) {
    if (key == "rank") {
      p.rank = readInt32(value, "rank", opName);
    } else if (key == "rankSize") {
      p.rankSize = readInt32(value, "rankSize", opName);
    } else if (key == "rankRoot") {
      p.rankRoot = readInt32(value, "rankRoot", opName);
    } else if (key == "backend") {
      p.backend = readString(value, "backend", opName);
    } else if (key == "hcclComm") {
      // Handles are pointers: accept the full unsigned range, reject negatives.
      ATB_CHECK(value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0),
                ERROR_INVALID_PARAM, opName, " param 'hcclComm' must be a non-negative integer handle, got ",
                value.dump());
      p.hcclComm = value.get<uint64_t>();
    } else if (key == "commMode") {
      p.commMode = static_cast<CommMode>(readInt32(value, "commMode", opName));
    } else if (key == "rankTableFile") {
      p.rankTableFile = readString(value, "rankTableFile", opName);
    } else if (key == "commDomain") {
      p.commDomain = readString(value, "commDomain", opName);
    } else {
      ATB_FAIL(ERROR_INVALID_PARAM, opName, " param has unknown key '", key,
               "'; known keys: rank, rankSize, rankRoot, backend, hcclComm, commMode, rankTableFile, "
               "commDomain");
    }
  }
  validateCommParam(p, opName);
  return p;
}

void validateCommParam(const CommParam& p, const std::string& opName) {
  ATB_CHECK(p.rankSize > 0, ERROR_INVALID_PARAM, opName, " param 'rankSize' must be > 0, got ", p.rankSize);
  ATB_CHECK(!(p.rank == -1 && p.rankSize > 1), ERROR_INVALID_PARAM, opName,
            " param 'rank' is -1 (unset) while rankSize is ", p.rankSize);
  ATB_CHECK(isKnownBackend(p.backend), ERROR_INVALID_PARAM, opName, " param 'backend' is '", p.backend,
            "'; expected one of hccl, nccl, shm, gloo, auto");
  ATB_CHECK(p.commMode == CommMode::MULTI_PROCESS || p.commMode == CommMode::MULTI_THREAD, ERROR_INVALID_PARAM, opName,
            " param 'commMode' must be 0 (multi-process) or 1 (multi-thread), got ", static_cast<int>(p.commMode));
  ATB_CHECK(p.commDomain.size() <= kMaxCommDomainLength, ERROR_INVALID_PARAM, opName, " param 'commDomain' is ",
            p.commDomain.size(), " characters; at most ", kMaxCommDomainLength, " allowed");
  if (!p.rankTableFile.empty()) {
    ATB_CHECK(fileExists(p.rankTableFile), ERROR_INVALID_PARAM, opName, " param 'rankTableFile' '", p.rankTableFile,
              "' does not exist or is not a regular file");
  }
  if (p.hcclComm == 0 && p.rankTableFile.empty()) {
    ATB_CHECK(p.rank >= 0 && p.rank < p.rankSize, ERROR_INVALID_PARAM, opName, " param 'rank' is ", p.rank,
              "; must be in [0, rankSize=", p.rankSize, ")");
    ATB_CHECK(p.rankRoot >= 0 && p.rankRoot < p.rankSize, ERROR_INVALID_PARAM, opName, " param 'rankRoot' is ",
              p.rankRoot, "; must be in [0, rankSize=", p.rankSize, ")");
  }
}

}  // namespace atb_ops
