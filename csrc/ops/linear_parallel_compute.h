// LinearParallelOperation's local arithmetic: one matmul of rows of x with a weight, with ATB's dequantisation,
// in float32. Inputs were checked by the plan (linear_parallel_plan.h); nothing here communicates.
//
//   float        x fp16/bf16, weight the same dtype: x @ w, accumulated in float32
//   W8A16        x fp16/bf16, weight int8: x @ ((w + offset) * scale), offset/scale per tensor [1], per channel [n],
//                per group [ceil(k / groupSize), n] (rows of w in groups of groupSize along k) or, with per token,
//                per channel and each row of the result times its token's scale
//   W8A8         x int8, weight int8: (x @ w as exact int32 + bias) * scale [* token scale of the row]; scale per
//                tensor [1] or per channel [n], given as float32 or as ATB's int64 (float32 bits in the low word)
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace atb_ops {

enum class LinearMath { kFloat, kWeightInt8, kInt8 };

struct Dequant {
  LinearMath math = LinearMath::kFloat;
  int32_t quantType = -1;  // LinearParallelParam::QuantType
  int32_t groupSize = 0;   // per group: rows of the weight per scale row
  at::Tensor offset;       // W8A16: added to the weight; W8A8: int32 bias added to the product. Undefined: none.
  at::Tensor scale;        // float32, [1] or [n] (or [groups, n]); undefined for kFloat
  at::Tensor tokenScale;   // float32 [rows], per token; undefined otherwise
};

// ATB's int64 dequant scale (a float32's bits in the low 32 bits of each element) or any floating scale, as
// float32 with the same shape.
at::Tensor scaleAsFloat(const at::Tensor& scale);

// x2d [rows, k] times weight (2-D: [k, n], or [n, k] when transWeight), dequantised: float32 [rows, n].
at::Tensor linearRows(const at::Tensor& x2d, const at::Tensor& weight, bool transWeight, const Dequant& dq);

}  // namespace atb_ops
