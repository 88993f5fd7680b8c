// The int8 block quantisation on CPU tensors (definitions in quant.h): the drivers that run the inner loops of
// quant_cpu_kernels.h over blocks, shards and threads, the packed [codes | scales] layout, and the entry points
// with their checks (quant_checks.cpp).
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
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/memory.h"
#include "quant/quant.h"
#include "quant/quant_cpu_kernels.h"

namespace atb_ops {
namespace quant {
namespace {

constexpr int64_t kGrainElements = 32768;
constexpr int64_t kTile = 1024;  // float32 accumulators kept on the stack by dequantizeSum
// A fresh output, its pages advised huge before the kernel first writes them (see core/memory.h).
at::Tensor emptyOutput(c10::IntArrayRef sizes, const at::TensorOptions& options) {
  at::Tensor t = at::empty(sizes, options);
  adviseHugePages(t);
  return t;
}

// Where one block's codes and scale go (plain arrays, or a packed [codes | scales] buffer).
struct BlockOut {
  int8_t* q;
  void* scale;  // may be unaligned in a packed buffer: written with memcpy
};

inline void putScale(void* dst, float s) {
  std::memcpy(dst, &s, sizeof(float));
}
inline float getScale(const void* src) {
  float s;
  std::memcpy(&s, src, sizeof(float));
  return s;
}

using namespace kernels;  // the inner loops this file drives

Isa detectIsa() {
#ifdef ATB_QUANT_X86
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) return Isa::kAvx2;
#endif
  return Isa::kScalar;
}

std::atomic<Isa>& activeIsa() {
  static std::atomic<Isa> isa{detectIsa()};
  return isa;
}

// ---- drivers --------------------------------------------------------------------------------------

// One block: codes and scale. Returns false when the block holds a NaN or an infinity.
template <typename T>
bool quantizeBlock(Isa isa, const T* x, int64_t len, BlockOut out, bool markNonFinite) {
  bool bad = false;
  const float m = blockAbsmax(isa, x, len, &bad);
  if (bad) {
    putScale(out.scale, markNonFinite ? std::numeric_limits<float>::quiet_NaN() : 0.0f);
    std::memset(out.q, 0, static_cast<size_t>(len));
    return false;
  }
  const float s = m / 127.0f;
  putScale(out.scale, s);
  if (s == 0.0f) {
    std::memset(out.q, 0, static_cast<size_t>(len));
  } else {
    blockCodes(isa, x, len, s, out.q);
  }
  return true;
}

// The first non-finite element of x[begin, end), for the error message.
template <typename T>
std::pair<int64_t, double> firstNonFinite(const T* x, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const float v = toFloat(x[i]);
    if (!std::isfinite(v)) return {i, static_cast<double>(v)};
  }
  return {-1, 0.0};
}

// Quantises every block b of x into where(b); raises ValueError on non-finite input when asked.
// Blocks in [skipBegin, skipEnd) are left untouched (a shard that never leaves its rank).
template <typename T, typename Where>
void quantizeAll(const T* x, int64_t numel, int64_t blockSize, bool raiseOnNonFinite, Where where,
                 int64_t skipBegin = 0, int64_t skipEnd = 0) {
  const Isa isa = activeIsa().load();
  const int64_t blocks = numBlocks(numel, blockSize);
  std::atomic<int64_t> firstBad{std::numeric_limits<int64_t>::max()};
  const int64_t grain = std::max<int64_t>(1, kGrainElements / blockSize);
  at::parallel_for(0, blocks, grain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      if (b >= skipBegin && b < skipEnd) continue;
      const int64_t start = b * blockSize;
      const int64_t len = std::min(blockSize, numel - start);
      if (!quantizeBlock(isa, x + start, len, where(b), /*markNonFinite=*/!raiseOnNonFinite)) {
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
    TORCH_CHECK_VALUE(false, "quantize_int8: x holds a non-finite value (", value, " at flat index ", index, ", block ",
                      bad, " of ", blocks, " with block_size ", blockSize,
                      "); int8 cannot represent NaN or infinity. Clean the input (torch.nan_to_num) first.");
  }
}

// out[b * blockSize + i] = float(codes of block b)[i] * scale of block b, for every block.
template <typename OutT, typename Where>
void dequantizeAll(int64_t numel, int64_t blockSize, OutT* out, Where where) {
  const Isa isa = activeIsa().load();
  const int64_t blocks = numBlocks(numel, blockSize);
  const int64_t grain = std::max<int64_t>(1, kGrainElements / blockSize);
  at::parallel_for(0, blocks, grain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t start = b * blockSize;
      const BlockOut in = where(b);
      dequantizeRun(isa, in.q, getScale(in.scale), out + start, std::min(blockSize, numel - start));
    }
  });
}

// The row-sum behind every reduce: acc[i - t0] = sum, in term order, of float(q[r][i]) *
// scale[r][(i / group) % period] over the rows r, with `exact[i]` (a rank's own float32 values, which
// never crossed the wire) as term number exactRow when given; for i in [t0, t1).
struct RowSum {
  const int8_t* q;
  int64_t qRowStride;
  const float* scale;
  int64_t nScales, rows, group, period;
  const float* exact;  // may be null
  int64_t exactRow;

  void into(Isa isa, int64_t t0, int64_t t1, float* acc) const {
    const int64_t terms = rows + (exact != nullptr ? 1 : 0);
    if (terms == 0) std::fill(acc, acc + (t1 - t0), 0.0f);
    const bool perElement = group == 1;  // one scale per element, repeating with `period`
    for (int64_t t = 0; t < terms; ++t) {
      if (exact != nullptr && t == exactRow) {
        t == 0 ? addExactRun<true>(isa, acc, exact + t0, t1 - t0) : addExactRun<false>(isa, acc, exact + t0, t1 - t0);
        continue;
      }
      const int64_t r = exact != nullptr && t > exactRow ? t - 1 : t;
      const int8_t* qr = q + r * qRowStride;
      const float* sr = scale + r * nScales;
      for (int64_t i = t0; i < t1;) {
        const int64_t k = perElement ? i % period : (i / group) % period;
        const int64_t run = perElement ? std::min(t1 - i, period - k) : std::min(t1 - i, (i / group + 1) * group - i);
        float* a = acc + (i - t0);
        if (t == 0) {
          perElement ? accumulateRun<true, true>(isa, a, qr + i, sr + k, run)
                     : accumulateRun<true, false>(isa, a, qr + i, sr + k, run);
        } else {
          perElement ? accumulateRun<false, true>(isa, a, qr + i, sr + k, run)
                     : accumulateRun<false, false>(isa, a, qr + i, sr + k, run);
        }
        i += run;
      }
    }
  }
};

// exact: the optional own-values term as float32 (converted when it is another floating dtype).
RowSum rowSumOf(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period, const at::Tensor& exact32,
                int64_t exactRow) {
  return RowSum{q.const_data_ptr<int8_t>(),
                q.size(0) > 1 ? q.stride(0) : 0,
                scale.const_data_ptr<float>(),
                scale.size(1),
                q.size(0),
                group,
                period,
                exact32.defined() ? exact32.const_data_ptr<float>() : nullptr,
                exactRow};
}

// Checks the optional exact term and returns it as contiguous float32 (undefined when absent).
at::Tensor exactAsFloat(const std::optional<at::Tensor>& exact, int64_t exactRow, const at::Tensor& q) {
  if (!exact.has_value() || !exact->defined()) return at::Tensor();
  checkExactTerm(*exact, exactRow, q);
  return exact->to(at::kFloat).contiguous();
}

template <typename OutT>
void dequantizeSumAll(const RowSum& sum, int64_t len, OutT* out) {
  const Isa isa = activeIsa().load();
  at::parallel_for(0, len, kGrainElements, [&](int64_t begin, int64_t end) {
    float acc[kTile];
    for (int64_t t0 = begin; t0 < end; t0 += kTile) {
      const int64_t t1 = std::min(end, t0 + kTile);
      sum.into(isa, t0, t1, acc);
      storeRun(isa, acc, out + t0, t1 - t0);
    }
  });
}

// The packed layout of quantizeInt8PackedCpu: shards of shardBlocks blocks back to back, each its codes then
// its scales; shard skipShard (-1: none) takes no room, so the shards after it move down.
struct PackedLayout {
  int64_t numel, blockSize, shardBlocks;
  int64_t skipShard = -1;

  int64_t shardElements() const { return shardBlocks * blockSize; }
  int64_t shardLength(int64_t j) const {
    return std::max<int64_t>(0, std::min(numel, (j + 1) * shardElements()) - j * shardElements());
  }
  int64_t shardBytesOf(int64_t j) const { return shardLength(j) + 4 * numBlocks(shardLength(j), blockSize); }
  int64_t shardOffset(int64_t j) const {
    // Every shard before j is full (only the last non-empty one may be short).
    const int64_t full = shardElements() + 4 * shardBlocks;
    return j * full - (skipShard >= 0 && j > skipShard ? shardBytesOf(skipShard) : 0);
  }
  int64_t totalBytes() const {
    return numel + 4 * numBlocks(numel, blockSize) - (skipShard >= 0 ? shardBytesOf(skipShard) : 0);
  }
  // Codes and scale of block b inside `base` (b not in the skipped shard).
  template <typename Byte>
  BlockOut at(Byte* base, int64_t b) const {
    const int64_t j = b / shardBlocks;
    const int64_t k = b - j * shardBlocks;
    auto* shard = const_cast<int8_t*>(reinterpret_cast<const int8_t*>(base)) + shardOffset(j);
    return BlockOut{shard + k * blockSize, shard + shardLength(j) + 4 * k};
  }
};

}  // namespace

std::tuple<at::Tensor, at::Tensor> quantizeInt8Cpu(const at::Tensor& x, int64_t blockSize, bool raiseOnNonFinite) {
  checkQuantizeArgs(x, blockSize);
  const at::Tensor xc = x.contiguous();
  const int64_t numel = xc.numel();
  at::Tensor q = emptyOutput(xc.sizes(), xc.options().dtype(at::kChar));
  at::Tensor scale = at::empty({numBlocks(numel, blockSize)}, xc.options().dtype(at::kFloat));
  if (numel == 0) return {q, scale};
  int8_t* qp = q.mutable_data_ptr<int8_t>();
  float* sp = scale.mutable_data_ptr<float>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "quantize_int8", [&] {
    quantizeAll(xc.const_data_ptr<scalar_t>(), numel, blockSize, raiseOnNonFinite,
                [&](int64_t b) { return BlockOut{qp + b * blockSize, sp + b}; });
  });
  return {q, scale};
}

at::Tensor quantizeInt8PackedCpu(const at::Tensor& x, int64_t blockSize, int64_t shardBlocks, bool raiseOnNonFinite,
                                 int64_t skipShard) {
  checkQuantizeArgs(x, blockSize);
  checkPackedArgs(blockSize, shardBlocks);
  const at::Tensor xc = x.contiguous();
  const PackedLayout layout{xc.numel(), blockSize, shardBlocks, skipShard};
  at::Tensor packed = emptyOutput({layout.totalBytes()}, xc.options().dtype(at::kChar));
  if (layout.numel == 0) return packed;
  int8_t* base = packed.mutable_data_ptr<int8_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "quantize_int8_packed", [&] {
    quantizeAll(
        xc.const_data_ptr<scalar_t>(), layout.numel, blockSize, raiseOnNonFinite,
        [&](int64_t b) { return layout.at(base, b); }, skipShard * shardBlocks, (skipShard + 1) * shardBlocks);
  });
  return packed;
}

at::Tensor dequantizeInt8PackedCpu(const at::Tensor& packed, int64_t numel, int64_t blockSize, int64_t shardBlocks,
                                   c10::ScalarType dtype) {
  checkDequantizePackedArgs(packed, numel, blockSize, shardBlocks, dtype);
  const PackedLayout layout{numel, blockSize, shardBlocks};
  const at::Tensor pc = packed.contiguous();
  at::Tensor out = emptyOutput({numel}, pc.options().dtype(dtype));
  if (numel == 0) return out;
  const int8_t* base = pc.const_data_ptr<int8_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "dequantize_int8_packed", [&] {
    dequantizeAll(numel, blockSize, out.mutable_data_ptr<scalar_t>(), [&](int64_t b) { return layout.at(base, b); });
  });
  return out;
}

at::Tensor dequantizeInt8Cpu(const at::Tensor& q, const at::Tensor& scale, c10::ScalarType dtype, int64_t blockSize) {
  checkDequantizeArgs(q, scale, dtype, blockSize);
  const int64_t numel = q.numel();
  const at::Tensor qc = q.contiguous();
  const at::Tensor sc = scale.contiguous();
  at::Tensor out = emptyOutput(qc.sizes(), qc.options().dtype(dtype));
  if (numel == 0) return out;
  const int8_t* qp = qc.const_data_ptr<int8_t>();
  const float* sp = sc.const_data_ptr<float>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "dequantize_int8", [&] {
    dequantizeAll(numel, blockSize, out.mutable_data_ptr<scalar_t>(), [&](int64_t b) {
      return BlockOut{const_cast<int8_t*>(qp) + b * blockSize, const_cast<float*>(sp) + b};
    });
  });
  return out;
}

at::Tensor dequantizeSumInt8Cpu(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                                c10::ScalarType outDtype, const std::optional<at::Tensor>& exact, int64_t exactRow) {
  checkDequantizeSumArgs(q, scale, group, period, outDtype);
  const at::Tensor exact32 = exactAsFloat(exact, exactRow, q);
  const int64_t len = q.size(1);
  at::Tensor out = emptyOutput({len}, q.options().dtype(outDtype));
  if (len == 0) return out;
  const RowSum sum = rowSumOf(q, scale, group, period, exact32, exactRow);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, outDtype, "dequantize_sum_int8",
                                  [&] { dequantizeSumAll(sum, len, out.mutable_data_ptr<scalar_t>()); });
  return out;
}

at::Tensor dequantizeSumRequantizeInt8Cpu(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                                          int64_t blockSize, int64_t paddedLen, const std::optional<at::Tensor>& exact,
                                          int64_t exactRow) {
  checkDequantizeSumArgs(q, scale, group, period, at::kFloat);
  const at::Tensor exact32 = exactAsFloat(exact, exactRow, q);
  TORCH_CHECK_VALUE(blockSize > 0, "dequantize_sum_requantize_int8: block_size must be > 0, got ", blockSize);
  const int64_t len = q.size(1);
  TORCH_CHECK_VALUE(paddedLen >= len, "dequantize_sum_requantize_int8: padded_len ", paddedLen,
                    " is shorter than the rows (", len, " elements)");
  const int64_t blocks = numBlocks(paddedLen, blockSize);
  const PackedLayout layout{paddedLen, blockSize, std::max<int64_t>(blocks, 1)};
  at::Tensor packed = emptyOutput({layout.totalBytes()}, q.options());
  if (paddedLen == 0) return packed;
  int8_t* base = packed.mutable_data_ptr<int8_t>();
  const RowSum sum = rowSumOf(q, scale, group, period, exact32, exactRow);
  const Isa isa = activeIsa().load();
  const int64_t grain = std::max<int64_t>(1, kGrainElements / blockSize);
  at::parallel_for(0, blocks, grain, [&](int64_t b0, int64_t b1) {
    std::vector<float> acc(static_cast<size_t>(blockSize));
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t start = b * blockSize;
      const int64_t n = std::min(blockSize, paddedLen - start);
      const int64_t real = std::max<int64_t>(0, std::min(n, len - start));  // the rest is padding: zeros
      sum.into(isa, start, start + real, acc.data());
      std::fill(acc.begin() + real, acc.begin() + n, 0.0f);
      quantizeBlock(isa, static_cast<const float*>(acc.data()), n, layout.at(base, b), /*markNonFinite=*/true);
    }
  });
  return packed;
}

std::string cpuIsa(const std::string& request) {
  // "" keeps the current choice; "scalar" or "avx2" (when the CPU has it) selects one; "auto" re-detects.
  if (request == "scalar") {
    activeIsa().store(Isa::kScalar);
  } else if (request == "avx2") {
    TORCH_CHECK_VALUE(detectIsa() == Isa::kAvx2, "quant cpu isa: this CPU (or build) has no AVX2 + F16C");
    activeIsa().store(Isa::kAvx2);
  } else if (request == "auto") {
    activeIsa().store(detectIsa());
  } else {
    TORCH_CHECK_VALUE(request.empty(), "quant cpu isa must be '', 'auto', 'scalar' or 'avx2', got '", request, "'");
  }
  return activeIsa().load() == Isa::kAvx2 ? "avx2" : "scalar";
}

}  // namespace quant
}  // namespace atb_ops
