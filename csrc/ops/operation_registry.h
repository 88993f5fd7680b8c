// Operations register a factory under their ATB name; createOperation looks them up.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ops/operation_base.h"

namespace atb_ops {

bool registerOperation(const std::string& name, std::function<std::unique_ptr<Operation>()> factory);

// The names createOperation knows, sorted.
std::vector<std::string> registeredOperations();

}  // namespace atb_ops
