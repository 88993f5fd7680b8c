// Communication parameters of ATB's AllToAllVV2Param / AllGatherParam, parsed from JSON.
#pragma once

#include <cstdint>
#include <string>

namespace atb_ops {

enum class CommMode : int32_t { UNDEFINED = -1, MULTI_PROCESS = 0, MULTI_THREAD = 1 };

// Every field of ATB's AllToAllVV2Param except rsv[64]; defaults are ATB's.
struct CommParam {
  int32_t rank = -1;
  int32_t rankSize = 0;
  int32_t rankRoot = 0;
  std::string backend = "hccl";
  uint64_t hcclComm = 0;  // 0: the operation creates and owns its communicator
  CommMode commMode = CommMode::MULTI_PROCESS;
  std::string rankTableFile;
  std::string commDomain;
};

// ATB's params share one layout; the aliases keep the op code readable.
using AllToAllVV2Param = CommParam;
using AllGatherParam = CommParam;
using AllToAllParam = CommParam;

constexpr size_t kMaxCommDomainLength = 128;

// Parses and validates ATB's creation checks; raises ERROR_INVALID_PARAM naming the field and value.
// `opName` only decorates messages.
CommParam parseCommParam(const std::string& json, const std::string& opName);

// Checks a CommParam built in C++ (parseCommParam calls it too).
void validateCommParam(const CommParam& p, const std::string& opName);

// The backends a param may name.
bool isKnownBackend(const std::string& backend);

}  // namespace atb_ops
