#include "core/params.h"

#include <sys/stat.h>

#include <algorithm>

#include "core/status.h"

namespace atb_ops {
namespace {

bool regularFile(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

const std::vector<std::string>& backendNames() {
  static const std::vector<std::string> names{"hccl", "lccl", "nccl", "shm", "gloo", "auto"};
  return names;
}

bool isKnownBackend(const std::string& backend) {
  const auto& names = backendNames();
  return std::find(names.begin(), names.end(), backend) != names.end();
}

std::string listOfNames(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text;
}

CommParam readCommParam(JsonFields& f, const CommParam& d) {
  CommParam p;
  p.rank = f.int32("rank", d.rank);
  p.rankSize = f.int32("rankSize", d.rankSize);
  p.rankRoot = f.int32("rankRoot", d.rankRoot);
  p.backend = f.string("backend", d.backend);
  p.hcclComm = f.handle("hcclComm", d.hcclComm);
  p.commMode = static_cast<CommMode>(f.int32("commMode", static_cast<int32_t>(d.commMode)));
  p.rankTableFile = f.string("rankTableFile", d.rankTableFile);
  p.commDomain = f.string("commDomain", d.commDomain);
  return p;
}

void validateCommParam(const CommParam& p, const std::string& opName) {
  ATB_CHECK(p.rankSize > 0, ERROR_INVALID_PARAM, opName, " param 'rankSize' must be > 0, got ", p.rankSize);
  ATB_CHECK(!(p.rank == -1 && p.rankSize > 1), ERROR_INVALID_PARAM, opName,
            " param 'rank' is -1 (unset) while rankSize is ", p.rankSize);
  ATB_CHECK(p.commMode == CommMode::MULTI_PROCESS || p.commMode == CommMode::MULTI_THREAD, ERROR_INVALID_PARAM, opName,
            " param 'commMode' must be 0 (multi-process) or 1 (multi-thread), got ", static_cast<int>(p.commMode));
  // ATB limits the string's bytes (UTF-8), not its characters: say so, or 40 emoji read as "160 characters".
  ATB_CHECK(p.commDomain.size() <= kMaxCommDomainLength, ERROR_INVALID_PARAM, opName, " param 'commDomain' is ",
            p.commDomain.size(), " bytes long in UTF-8; at most ", kMaxCommDomainLength, " bytes are allowed");
  if (!p.rankTableFile.empty()) {
    ATB_CHECK(regularFile(p.rankTableFile), ERROR_INVALID_PARAM, opName, " param 'rankTableFile' '", p.rankTableFile,
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
