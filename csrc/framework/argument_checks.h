// The argument checks and texts that the framework's collectives share (collectives.cpp, torch_forms.cpp): messages
// name tensors and values as a Python user reads them.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace atb_ops::framework::detail {

// torch's spelling of a dtype ("torch.float32").
std::string torchName(c10::ScalarType t);
// "[1, 2, 3]", as Python prints a list.
std::string listOf(c10::IntArrayRef v);
// Defined, of a supported dtype, contiguous; raises ERROR_INVALID_PARAM naming `name` and what it got.
void checkTensor(const char* name, const at::Tensor& x);
// The displacements of blocks of `counts` packed one after another.
std::vector<int64_t> packed(const std::vector<int64_t>& counts);

}  // namespace atb_ops::framework::detail
