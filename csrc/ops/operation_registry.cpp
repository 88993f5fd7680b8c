#include "ops/operation_registry.h"

#include <map>

#include <c10/util/StringUtil.h>

#include "core/status.h"

namespace atb_ops {
namespace {

std::map<std::string, std::function<std::unique_ptr<Operation>()>>& table() {
  static std::map<std::string, std::function<std::unique_ptr<Operation>()>> t;
  return t;
}

}  // namespace

bool registerOperation(const std::string& name, std::function<std::unique_ptr<Operation>()> factory) {
  table()[name] = std::move(factory);
  return true;
}

std::vector<std::string> registeredOperations() {
  std::vector<std::string> known;
  for (const auto& kv : table()) known.push_back(kv.first);
  return known;
}

std::unique_ptr<Operation> createOperation(const std::string& name) {
  auto it = table().find(name);
  if (it == table().end()) {
    ATB_FAIL(ERROR_INVALID_PARAM, "unknown operation '", name, "'; known: ", c10::Join(", ", registeredOperations()));
  }
  return it->second();
}

}  // namespace atb_ops
