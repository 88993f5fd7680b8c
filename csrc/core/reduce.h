// Reduction operators and the local arithmetic every backend uses when it reduces on the host.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace atb_ops {

// ATB's allReduceType / reduceType strings, in HCCL's HcclReduceOp order.
enum class ReduceOp : int32_t { kSum = 0, kProd = 1, kMax = 2, kMin = 3 };

// "sum", "prod", "max", "min"; raises ERROR_INVALID_PARAM naming `what` and the value.
ReduceOp parseReduceOp(const std::string& name, const std::string& what);
const char* reduceOpName(ReduceOp op);

// The dtype a reduction accumulates in: float32 for float16/bfloat16 (as the seed's pipeline does), the
// dtype itself otherwise.
c10::ScalarType accumulationType(c10::ScalarType t);

// acc = acc (op) x, elementwise. acc is in accumulationType(x's dtype); same numel; CPU, contiguous.
void accumulate(at::Tensor& acc, const at::Tensor& x, ReduceOp op);

// out = parts[0] (op) parts[1] (op) ... in this order (every rank reduces in rank order, so all ranks get
// bit-identical results); 16-bit floats accumulate in float32 and round once. Same numel everywhere.
void reduceInOrder(const std::vector<at::Tensor>& parts, at::Tensor& out, ReduceOp op);

// The same over `count` raw host buffers of n elements of `dtype` each; `out` may alias a part at the same
// offset.
void reduceInOrder(const char* const* parts, size_t count, char* out, int64_t n, c10::ScalarType dtype, ReduceOp op);

}  // namespace atb_ops
