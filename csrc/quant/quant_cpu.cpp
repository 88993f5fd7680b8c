// CPU kernels of the int8 block quantisation (definitions in quant.h).
//
// The inner loops are written over kLanes independent lanes (absmax) or plain element-wise runs, so the
// compiler vectorises them at -O2 without -ffast-math: no floating-point reduction is reordered, and
// every result is bit-identical to the scalar definition (and to the torch reference in the tests).
#include "quant/quant.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

namespace atb_ops {
namespace quant {
namespace {

constexpr int kLanes = 16;
// (v + kRoundMagic) - kRoundMagic rounds any |v| < 2^22 to the nearest integer, ties to even, in the
// default rounding mode (1.5 * 2^23 leaves no fraction bits); it vectorises where nearbyint may not.
constexpr float kRoundMagic = 12582912.0f;
constexpr int64_t kGrainElements = 32768;
constexpr int64_t kTile = 1024;  // float32 accumulators kept on the stack by dequantizeSum

inline float toFloat(float v) { return v; }
inline float toFloat(double v) { return static_cast<float>(v); }
inline float toFloat(c10::Half v) { return static_cast<float>(v); }
inline float toFloat(c10::BFloat16 v) { return static_cast<float>(v); }

inline bool isFloatingInput(c10::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 || t == at::kFloat || t == at::kDouble;
}

// One block: writes q[0, len) and *scale. Returns false when the block holds a NaN or an infinity.
template <typename T>
bool quantizeBlock(const T* x, int64_t len, int8_t* q, float* scale, bool markNonFinite) {
  // Shape checks are the caller's; here len >= 1.
  float lanesMax[kLanes] = {};
  int32_t lanesBad[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float a = std::fabs(toFloat(x[i + l]));
      lanesMax[l] = a > lanesMax[l] ? a : lanesMax[l];
      lanesBad[l] |= !(a <= FLT_MAX);  // NaN compares false, inf is above FLT_MAX
    }
  }
  float absmax = 0.0f;
  int32_t bad = 0;
  for (; i < len; ++i) {
    const float a = std::fabs(toFloat(x[i]));
    absmax = a > absmax ? a : absmax;
    bad |= !(a <= FLT_MAX);
  }
  for (int l = 0; l < kLanes; ++l) {
    absmax = lanesMax[l] > absmax ? lanesMax[l] : absmax;
    bad |= lanesBad[l];
  }
  if (bad) {
    *scale = markNonFinite ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
    std::memset(q, 0, static_cast<size_t>(len));
    return false;
  }
  const float s = absmax / 127.0f;
  *scale = s;
  if (s == 0.0f) {
    std::memset(q, 0, static_cast<size_t>(len));
    return true;
  }
  for (i = 0; i < len; ++i) {
    float v = toFloat(x[i]) / s;
    v = v < -127.0f ? -127.0f : v;
    v = v > 127.0f ? 127.0f : v;
    v = (v + kRoundMagic) - kRoundMagic;
    q[i] = static_cast<int8_t>(static_cast<int32_t>(v));
  }
  return true;
}

// The first non-finite element of block `b`, for the error message.
template <typename T>
std::pair<int64_t, double> firstNonFinite(const T* x, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const float v = toFloat(x[i]);
    if (!std::isfinite(v)) return {i, static_cast<double>(v)};
  }
  return {-1, 0.0};
}

template <typename T>
void quantizeAll(const T* x, int64_t numel, int64_t blockSize, int8_t* q, float* scale, bool raiseOnNonFinite) {
  const int64_t blocks = numBlocks(numel, blockSize);
  std::atomic<int64_t> firstBad{std::numeric_limits<int64_t>::max()};
  const int64_t grain = std::max<int64_t>(1, kGrainElements / blockSize);
  at::parallel_for(0, blocks, grain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t start = b * blockSize;
      const int64_t len = std::min(blockSize, numel - start);
      if (!quantizeBlock(x + start, len, q + start, scale + b, /*markNonFinite=*/!raiseOnNonFinite)) {
        int64_t seen = firstBad.load();
        while (b < seen && !firstBad.compare_exchange_weak(seen, b)) {
        }
      }
    }
  });
  const int64_t bad = firstBad.load();
  if (raiseOnNonFinite && bad != std::numeric_limits<int64_t>::max()) {
    const int64_t start = bad * blockSize;
    const auto [index, value] = firstNonFinite(x, start, std::min(numel, start + blockSize));
    TORCH_CHECK_VALUE(false, "quantize_int8: x holds a non-finite value (", value, " at flat index ", index,
                      ", block ", bad, " of ", blocks, " with block_size ", blockSize,
                      "); int8 cannot represent NaN or infinity. Clean the input (torch.nan_to_num) first.");
  }
}

inline void accumulateScaled(float* acc, const int8_t* q, float s, int64_t n, bool first) {
  if (first) {
    for (int64_t i = 0; i < n; ++i) acc[i] = static_cast<float>(q[i]) * s;
  } else {
    for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<float>(q[i]) * s;
  }
}

inline void accumulateScaledVector(float* acc, const int8_t* q, const float* s, int64_t n, bool first) {
  if (first) {
    for (int64_t i = 0; i < n; ++i) acc[i] = static_cast<float>(q[i]) * s[i];
  } else {
    for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<float>(q[i]) * s[i];
  }
}

template <typename OutT>
void dequantizeSumAll(const int8_t* q, int64_t qRowStride, const float* scale, int64_t nScales, int64_t rows,
                      int64_t len, int64_t group, int64_t period, OutT* out) {
  at::parallel_for(0, len, kGrainElements, [&](int64_t begin, int64_t end) {
    float acc[kTile];
    for (int64_t t0 = begin; t0 < end; t0 += kTile) {
      const int64_t t1 = std::min(end, t0 + kTile);
      for (int64_t r = 0; r < rows; ++r) {
        const int8_t* qr = q + r * qRowStride;
        const float* sr = scale + r * nScales;
        const bool first = r == 0;
        for (int64_t i = t0; i < t1;) {
          int64_t run;
          if (group == 1) {  // one scale per element, repeating with `period`
            const int64_t k = i % period;
            run = std::min(t1 - i, period - k);
            accumulateScaledVector(acc + (i - t0), qr + i, sr + k, run, first);
          } else {  // one scale per run of `group` elements
            const int64_t g = i / group;
            run = std::min(t1 - i, (g + 1) * group - i);
            accumulateScaled(acc + (i - t0), qr + i, sr[g % period], run, first);
          }
          i += run;
        }
      }
      if (rows == 0) std::fill(acc, acc + (t1 - t0), 0.0f);
      for (int64_t i = t0; i < t1; ++i) out[i] = static_cast<OutT>(acc[i - t0]);
    }
  });
}

}  // namespace

void checkQuantizeArgs(const at::Tensor& x, int64_t blockSize) {
  // Dtype and block checks
  TORCH_CHECK_TYPE(isFloatingInput(x.scalar_type()),
                   "quantize_int8: x must be float16, bfloat16, float32 or float64, got ", x.scalar_type());
  TORCH_CHECK_VALUE(blockSize > 0, "quantize_int8: block_size must be > 0, got ", blockSize);
}

void checkDequantizeSumArgs(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                            c10::ScalarType outDtype) {
  // Dtype checks
  TORCH_CHECK_TYPE(q.scalar_type() == at::kChar, "dequantize: q must be int8, got ", q.scalar_type());
  TORCH_CHECK_TYPE(scale.scalar_type() == at::kFloat, "dequantize: scale must be float32, got ",
                   scale.scalar_type());
  TORCH_CHECK_TYPE(isFloatingInput(outDtype),
                   "dequantize: dtype must be float16, bfloat16, float32 or float64, got ", outDtype);
  // Shape and layout checks: q [rows, len] with unit inner stride, scale [rows, nScales] contiguous
  TORCH_CHECK_VALUE(q.dim() == 2 && scale.dim() == 2, "dequantize_sum: q and scale must be 2-D, got q ", q.sizes(),
                    " and scale ", scale.sizes());
  TORCH_CHECK_VALUE(q.size(0) == scale.size(0), "dequantize_sum: q has ", q.size(0), " rows but scale has ",
                    scale.size(0));
  TORCH_CHECK_VALUE(q.size(1) <= 1 || q.stride(1) == 1, "dequantize_sum: q rows must be contiguous, strides ",
                    q.strides());
  TORCH_CHECK_VALUE(scale.is_contiguous(), "dequantize_sum: scale must be contiguous, strides ", scale.strides());
  TORCH_CHECK_VALUE(q.device() == scale.device(), "dequantize: q is on ", q.device(), " but scale on ",
                    scale.device());
  TORCH_CHECK_VALUE(group >= 1 && period >= 1, "dequantize_sum: group and period must be >= 1, got group ", group,
                    " period ", period);
  const int64_t len = q.size(1);
  const int64_t needed = len == 0 ? 0 : std::min(numBlocks(len, group), period);
  TORCH_CHECK_VALUE(scale.size(1) >= needed, "dequantize: ", len, " elements with group ", group, " and period ",
                    period, " need ", needed, " scales per row, got ", scale.size(1));
}

std::tuple<at::Tensor, at::Tensor> quantizeInt8Cpu(const at::Tensor& x, int64_t blockSize, bool raiseOnNonFinite) {
  checkQuantizeArgs(x, blockSize);
  const at::Tensor xc = x.contiguous();
  const int64_t numel = xc.numel();
  at::Tensor q = at::empty(xc.sizes(), xc.options().dtype(at::kChar));
  at::Tensor scale = at::empty({numBlocks(numel, blockSize)}, xc.options().dtype(at::kFloat));
  if (numel == 0) return {q, scale};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "quantize_int8", [&] {
    quantizeAll(xc.const_data_ptr<scalar_t>(), numel, blockSize, q.mutable_data_ptr<int8_t>(),
                scale.mutable_data_ptr<float>(), raiseOnNonFinite);
  });
  return {q, scale};
}

at::Tensor dequantizeSumInt8Cpu(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                                c10::ScalarType outDtype) {
  checkDequantizeSumArgs(q, scale, group, period, outDtype);
  const int64_t len = q.size(1);
  at::Tensor out = at::empty({len}, q.options().dtype(outDtype));
  if (len == 0) return out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, outDtype, "dequantize_int8", [&] {
    dequantizeSumAll(q.const_data_ptr<int8_t>(), q.size(0) > 1 ? q.stride(0) : 0, scale.const_data_ptr<float>(),
                     scale.size(1), q.size(0), len, group, period, out.mutable_data_ptr<scalar_t>());
  });
  return out;
}

}  // namespace quant
}  // namespace atb_ops
