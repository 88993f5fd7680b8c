#include "ops/linear_parallel_compute.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "core/tensor_checks.h"

namespace atb_ops {
namespace {

// A float32 GEMM is exact on int8 operands while every partial sum stays within 2^24: a block of 1024 terms of
// at most 128 * 128 = 2^14 each does, in any summation order.
constexpr int64_t kExactFloatBlock = 1024;

// x [rows, k] @ w [k, n] of 16-bit floats, accumulated in float32. CPUs here have no fast 16-bit GEMM (torch's
// reference loop ran at 0.3 GFLOP/s against 19 for float32 on this host), so they compute in float32; device
// GEMMs accumulate 16-bit inputs in float32 themselves.
at::Tensor floatMatmul(const at::Tensor& x, const at::Tensor& w) {
  if (x.is_cpu()) return at::matmul(x.to(at::kFloat), w.to(at::kFloat));
  return at::matmul(x, w).to(at::kFloat);
}

// x [rows, k] @ w [k, n] of int8, exactly, as int32 (ATB's INT8INT8_INT32 accumulation).
at::Tensor int8Matmul(const at::Tensor& x, const at::Tensor& w) {
  if (!x.is_cpu()) {
    // float64 holds every sum exactly (|sum| <= k * 2^14 < 2^53) and, unlike float32, is never TF32.
    return at::matmul(x.to(at::kDouble), w.to(at::kDouble)).to(at::kInt);
  }
  const at::Tensor xf = x.to(at::kFloat);
  const at::Tensor wf = w.to(at::kFloat);
  const int64_t k = x.size(1);
  if (k <= kExactFloatBlock) return at::matmul(xf, wf).to(at::kInt);
  at::Tensor acc = at::zeros({x.size(0), w.size(1)}, x.options().dtype(at::kInt));
  for (int64_t k0 = 0; k0 < k; k0 += kExactFloatBlock) {
    const int64_t len = std::min(kExactFloatBlock, k - k0);
    acc.add_(at::matmul(xf.narrow(1, k0, len), wf.narrow(0, k0, len)).to(at::kInt));
  }
  return acc;
}

// A W8A16 offset or scale as a float32 [k or 1, n or 1] that broadcasts over the [k, n] weight.
at::Tensor perWeightRow(const at::Tensor& t, const Dequant& dq, int64_t k) {
  const at::Tensor f = scaleAsFloat(t);
  if (dq.quantType == 2) {  // per group: scale row g covers weight rows [g * groupSize, (g + 1) * groupSize)
    return f.reshape({-1, f.size(-1)}).repeat_interleave(dq.groupSize, 0).narrow(0, 0, k);
  }
  return f.reshape({1, -1});  // per tensor [1, 1], per channel / per token [1, n]
}

}  // namespace

at::Tensor scaleAsFloat(const at::Tensor& scale) {
  if (scale.scalar_type() != at::kLong) return scale.to(at::kFloat);
  // Each int64 holds a float32's bits in its low 32 bits (ATB's deqScale); on a little-endian host that is the
  // first float32 of each 8-byte pair.
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ATB's int64 deqScale layout assumes little endian");
  const at::Tensor flat = flatElements(scale.contiguous());
  return flat.view(at::kFloat).reshape({-1, 2}).select(1, 0).reshape(scale.sizes());
}

at::Tensor linearRows(const at::Tensor& x2d, const at::Tensor& weight, bool transWeight, const Dequant& dq) {
  const at::Tensor w = transWeight ? weight.t() : weight;  // [k, n]
  at::Tensor y;
  switch (dq.math) {
    case LinearMath::kFloat: y = floatMatmul(x2d, w); break;
    case LinearMath::kWeightInt8: {
      at::Tensor wf = w.to(at::kFloat);
      if (dq.offset.defined()) wf = wf + perWeightRow(dq.offset, dq, w.size(0));
      wf = wf * perWeightRow(dq.scale, dq, w.size(0));
      y = at::matmul(x2d.to(at::kFloat), wf);
      break;
    }
    case LinearMath::kInt8: {
      at::Tensor acc = int8Matmul(x2d, w);
      if (dq.offset.defined()) acc.add_(dq.offset.reshape({1, -1}).to(at::kInt));  // exact, before any rounding
      y = acc.to(at::kFloat);
      y.mul_(scaleAsFloat(dq.scale).reshape({1, -1}));
      break;
    }
  }
  if (dq.tokenScale.defined()) y.mul_(dq.tokenScale.reshape({-1, 1}).to(at::kFloat));
  return y;
}

}  // namespace atb_ops
