// The communication fields every ATB communication param shares (AllToAllVV2Param, AllGatherParam, ...),
// read from set_param's JSON. Operator-specific fields are read by each operator (csrc/ops/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_fields.h"

namespace atb_ops {

enum class CommMode : int32_t { UNDEFINED = -1, MULTI_PROCESS = 0, MULTI_THREAD = 1 };

// ATB's common fields (rsv[] aside); defaults are ATB's.
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

constexpr size_t kMaxCommDomainLength = 128;

// Reads the common fields (missing ones keep `defaults`, e.g. backend "lccl" for ReduceScatter).
CommParam readCommParam(JsonFields& fields, const CommParam& defaults = CommParam{});

// ATB's creation checks shared by every communication operator; raises ERROR_INVALID_PARAM naming the
// field and value. Backend names are checked by the operator (each accepts its own list).
void validateCommParam(const CommParam& p, const std::string& opName);

// Every backend name a communication param may carry, ATB's first (hccl, lccl), then atb_ops' own: the one
// list that isKnownBackend, the operators' messages and LinearParallel's (which adds ATB's fused lcoc and mc2)
// read. A new backend adds its name here (README "Adding a backend").
const std::vector<std::string>& backendNames();
bool isKnownBackend(const std::string& backend);
// "a, b or c": `names` as a message lists them.
std::string listOfNames(const std::vector<std::string>& names);

}  // namespace atb_ops
