// Checks on the tensors an operator receives and writes, with ATB's error names and the values in every
// message (flash-attention's CHECK_SHAPE style).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace atb_ops {

using Shape = std::vector<int64_t>;

// What an operator's output will be: its dtype and shape (its device is the first input's).
struct TensorDesc {
  c10::ScalarType dtype;
  Shape shape;
};

// Raises ERROR_INVALID_TENSOR_SIZE / _DTYPE / ERROR_INVALID_PARAM when `out` (a caller's buffer for output
// `index` of `op`) is undefined, of another shape or dtype than `want`, on another device than `device`, or
// not contiguous.
void checkOutput(const at::Tensor& out, const TensorDesc& want, const c10::Device& device, const std::string& op,
                 size_t index);

// Whether two tensors may share bytes: on one device, intersecting address ranges, whatever storages hold them
// (strided tensors count their whole span). Writing `a` while reading `b` would then corrupt one of them.
bool mayOverlap(const at::Tensor& a, const at::Tensor& b);

// A contiguous tensor's elements as a 1-D view of stride 1, which a view as another dtype needs: not reshape({-1}),
// as torch calls a one-element tensor contiguous whatever its stride (the one element of x[::2]).
at::Tensor flatElements(const at::Tensor& contiguous);

// A host copy of a 1-D int64 tensor of `length` entries (ATB's count tensors: host tensors; device copies are
// brought back). Raises ERROR_INVALID_TENSOR_DTYPE / _DIM naming operator `op`'s input `input`.
// `lengthName` names the length in the message (e.g. "rankSize"). Messages are made only on failure.
std::vector<int64_t> hostInt64(const at::Tensor& t, const std::string& op, const char* input, int64_t length,
                               const char* lengthName = "");

}  // namespace atb_ops
