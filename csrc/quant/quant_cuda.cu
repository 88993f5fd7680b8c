// CUDA kernels of the int8 block quantisation (definitions in quant.h); built only when torch has CUDA.
// Same arithmetic as the CPU kernels: IEEE division (__fdiv_rn), round half to even (rintf), separate
// multiply and add (__fmul_rn, __fadd_rn; setup.py also passes --fmad=false), float32 accumulation over
// rows in row order. Only c10/cuda headers are used (ATen/cuda pulls cuBLAS/cuSPARSE headers).
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <limits>
#include <optional>

#include "quant/quant.h"

namespace atb_ops {
namespace quant {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int kWarpsPerCta = kThreads / kWarp;
constexpr unsigned long long kNoBadBlock = std::numeric_limits<unsigned long long>::max();

// Where block b's codes and scale live: separate arrays (shardBlocks == 0) or the packed wire format,
// whose shard skipShard (-1: none) takes no room (see quant.h).
struct Layout {
  int8_t* codes;  // packed: the buffer; else the codes array
  float* scales;  // unused when packed
  int64_t numel, blockSize, shardBlocks;
  int64_t skipShard = -1;

  __host__ __device__ int64_t shardLength(int64_t j) const {
    const int64_t elements = shardBlocks * blockSize;
    const int64_t end = numel < (j + 1) * elements ? numel : (j + 1) * elements;
    return end - j * elements > 0 ? end - j * elements : 0;
  }
  __host__ __device__ int64_t shardBytesOf(int64_t j) const {
    const int64_t len = shardLength(j);
    return len + 4 * ((len + blockSize - 1) / blockSize);
  }
  __device__ int8_t* shard(int64_t j) const {
    const int64_t full = shardBlocks * (blockSize + 4);
    return codes + j * full - (skipShard >= 0 && j > skipShard ? shardBytesOf(skipShard) : 0);
  }
  __device__ int8_t* code(int64_t b) const {
    if (shardBlocks == 0) return codes + b * blockSize;
    const int64_t j = b / shardBlocks;
    return shard(j) + (b - j * shardBlocks) * blockSize;
  }
  __device__ char* scale(int64_t b) const {  // may be unaligned when packed: accessed bytewise
    if (shardBlocks == 0) return reinterpret_cast<char*>(scales + b);
    const int64_t j = b / shardBlocks;
    return reinterpret_cast<char*>(shard(j) + shardLength(j)) + 4 * (b - j * shardBlocks);
  }
};

__device__ void putScale(char* dst, float s) {
  memcpy(dst, &s, sizeof(float));
}
__device__ float getScale(const char* src) {
  float s;
  memcpy(&s, src, sizeof(float));
  return s;
}

// One warp per quantisation block: absmax (and a non-finite flag) by warp shuffles, then the codes.
// x: [numel]; firstBad: lowest block index holding NaN / inf; blocks in [skipBegin, skipEnd) are left out.
template <typename T>
__global__ void quantizeKernel(const T* __restrict__ x, Layout out, int64_t blocks, bool markNonFinite,
                               unsigned long long* firstBad, int64_t skipBegin, int64_t skipEnd) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warpsTotal = static_cast<int64_t>(gridDim.x) * kWarpsPerCta;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * kWarpsPerCta + threadIdx.x / kWarp; b < blocks; b += warpsTotal) {
    // The skipped shard has no room in the packed buffer: writing it would overwrite the next shard (or run past
    // the end after the last one). b is the same across the warp, so the shuffles below stay whole.
    if (b >= skipBegin && b < skipEnd) continue;
    const int64_t start = b * out.blockSize;
    const int64_t len = min(out.blockSize, out.numel - start);
    int8_t* q = out.code(b);
    float absmax = 0.0f;
    int bad = 0;
    for (int64_t i = lane; i < len; i += kWarp) {
      const float a = fabsf(static_cast<float>(x[start + i]));
      absmax = a > absmax ? a : absmax;
      bad |= !(a <= FLT_MAX);
    }
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      const float other = __shfl_xor_sync(0xffffffffu, absmax, offset);
      absmax = other > absmax ? other : absmax;
      bad |= __shfl_xor_sync(0xffffffffu, bad, offset);
    }
    if (bad) {
      for (int64_t i = lane; i < len; i += kWarp) q[i] = 0;
      if (lane == 0) {
        putScale(out.scale(b), markNonFinite ? __int_as_float(0x7fc00000) : 0.0f);
        atomicMin(firstBad, static_cast<unsigned long long>(b));
      }
      continue;
    }
    const float s = __fdiv_rn(absmax, 127.0f);
    if (lane == 0) putScale(out.scale(b), s);
    for (int64_t i = lane; i < len; i += kWarp) {
      int8_t code = 0;
      if (s != 0.0f) {
        float v = __fdiv_rn(static_cast<float>(x[start + i]), s);
        v = v < -127.0f ? -127.0f : v;
        v = v > 127.0f ? 127.0f : v;
        code = static_cast<int8_t>(static_cast<int>(rintf(v)));
      }
      q[i] = code;
    }
  }
}

// out[i] = float(code of element i) * scale of its block.
template <typename OutT>
__global__ void dequantizeKernel(Layout in, OutT* __restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < in.numel; i += stride) {
    const int64_t b = i / in.blockSize;
    const float code = static_cast<float>(in.code(b)[i - b * in.blockSize]);
    out[i] = static_cast<OutT>(__fmul_rn(code, getScale(in.scale(b))));
  }
}

// out[i] = sum over the terms, in order, of float(q[r][i]) * scale[r][(i / group) % period] for each row r
// and, when given, exact[i] as term number exactRow.
template <typename OutT>
__global__ void dequantizeSumKernel(const int8_t* __restrict__ q, int64_t qRowStride, const float* __restrict__ scale,
                                    int64_t nScales, int64_t rows, int64_t len, int64_t group, int64_t period,
                                    const float* __restrict__ exact, int64_t exactRow, OutT* __restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t terms = rows + (exact != nullptr ? 1 : 0);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < len; i += stride) {
    const int64_t k = (i / group) % period;
    float acc = 0.0f;
    for (int64_t t = 0; t < terms; ++t) {
      float term;
      if (exact != nullptr && t == exactRow) {
        term = exact[i];
      } else {
        const int64_t r = exact != nullptr && t > exactRow ? t - 1 : t;
        term = __fmul_rn(static_cast<float>(q[r * qRowStride + i]), scale[r * nScales + k]);
      }
      acc = t == 0 ? term : __fadd_rn(acc, term);
    }
    out[i] = static_cast<OutT>(acc);
  }
}

int gridFor(int64_t work, int perCta) {
  int device = 0;
  int sms = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int64_t ctas = (work + perCta - 1) / perCta;
  const int64_t cap = static_cast<int64_t>(std::max(sms, 1)) * 32;
  return static_cast<int>(std::max<int64_t>(1, std::min(ctas, cap)));
}

void quantizeInto(const at::Tensor& xc, const Layout& out, bool raiseOnNonFinite, int64_t skipBegin = 0,
                  int64_t skipEnd = 0) {
  const int64_t blocks = numBlocks(out.numel, out.blockSize);
  at::Tensor firstBad = at::full({1}, -1, xc.options().dtype(at::kLong));  // all bits set: kNoBadBlock
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "quantize_int8_cuda", [&] {
    quantizeKernel<scalar_t><<<gridFor(blocks, kWarpsPerCta), kThreads, 0, stream>>>(
        xc.const_data_ptr<scalar_t>(), out, blocks, !raiseOnNonFinite,
        reinterpret_cast<unsigned long long*>(firstBad.mutable_data_ptr<int64_t>()), skipBegin, skipEnd);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  if (raiseOnNonFinite) {
    const auto bad = static_cast<unsigned long long>(firstBad.item<int64_t>());  // synchronises
    TORCH_CHECK_VALUE(bad == kNoBadBlock, "quantize_int8: x holds a non-finite value in block ", bad, " of ", blocks,
                      " (block_size ", out.blockSize,
                      "); int8 cannot represent NaN or infinity. Clean the input (torch.nan_to_num) first.");
  }
}

at::Tensor dequantizeFrom(const Layout& in, const at::Tensor& like, c10::ScalarType dtype) {
  at::Tensor out = at::empty({in.numel}, like.options().dtype(dtype));
  if (in.numel == 0) return out;
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "dequantize_int8_cuda", [&] {
    dequantizeKernel<scalar_t>
        <<<gridFor(in.numel, kThreads), kThreads, 0, stream>>>(in, out.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> quantizeInt8Cuda(const at::Tensor& x, int64_t blockSize, bool raiseOnNonFinite) {
  checkQuantizeArgs(x, blockSize);
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor xc = x.contiguous();
  at::Tensor q = at::empty(xc.sizes(), xc.options().dtype(at::kChar));
  at::Tensor scale = at::empty({numBlocks(xc.numel(), blockSize)}, xc.options().dtype(at::kFloat));
  if (xc.numel() == 0) return {q, scale};
  quantizeInto(xc, Layout{q.mutable_data_ptr<int8_t>(), scale.mutable_data_ptr<float>(), xc.numel(), blockSize, 0},
               raiseOnNonFinite);
  return {q, scale};
}

at::Tensor quantizeInt8PackedCuda(const at::Tensor& x, int64_t blockSize, int64_t shardBlocks, bool raiseOnNonFinite,
                                  int64_t skipShard) {
  checkQuantizeArgs(x, blockSize);
  TORCH_CHECK_VALUE(shardBlocks > 0, "quantize_int8_packed: shard_blocks must be > 0, got ", shardBlocks);
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor xc = x.contiguous();
  const int64_t numel = xc.numel();
  Layout layout{nullptr, nullptr, numel, blockSize, shardBlocks, skipShard};
  const int64_t skipped = skipShard >= 0 ? layout.shardBytesOf(skipShard) : 0;
  at::Tensor packed = at::empty({numel + 4 * numBlocks(numel, blockSize) - skipped}, xc.options().dtype(at::kChar));
  if (numel == 0) return packed;
  layout.codes = packed.mutable_data_ptr<int8_t>();
  quantizeInto(xc, layout, raiseOnNonFinite, skipShard * shardBlocks, (skipShard + 1) * shardBlocks);
  return packed;
}

at::Tensor dequantizeInt8Cuda(const at::Tensor& q, const at::Tensor& scale, c10::ScalarType dtype, int64_t blockSize) {
  checkDequantizeArgs(q, scale, dtype, blockSize);
  const c10::cuda::CUDAGuard guard(q.device());
  const at::Tensor qc = q.contiguous();
  const at::Tensor sc = scale.contiguous();
  const Layout in{const_cast<int8_t*>(qc.const_data_ptr<int8_t>()), const_cast<float*>(sc.const_data_ptr<float>()),
                  qc.numel(), blockSize, 0};
  return dequantizeFrom(in, qc, dtype).view(q.sizes());
}

at::Tensor dequantizeInt8PackedCuda(const at::Tensor& packed, int64_t numel, int64_t blockSize, int64_t shardBlocks,
                                    c10::ScalarType dtype) {
  checkDequantizePackedArgs(packed, numel, blockSize, shardBlocks, dtype);
  const c10::cuda::CUDAGuard guard(packed.device());
  const at::Tensor pc = packed.contiguous();
  const Layout in{const_cast<int8_t*>(pc.const_data_ptr<int8_t>()), nullptr, numel, blockSize, shardBlocks};
  return dequantizeFrom(in, pc, dtype);
}

at::Tensor dequantizeSumInt8Cuda(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                                 c10::ScalarType outDtype, const std::optional<at::Tensor>& exact, int64_t exactRow) {
  checkDequantizeSumArgs(q, scale, group, period, outDtype);
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor exact32;
  if (exact.has_value() && exact->defined()) {
    checkExactTerm(*exact, exactRow, q);
    exact32 = exact->to(at::kFloat).contiguous();
  }
  const int64_t len = q.size(1);
  at::Tensor out = at::empty({len}, q.options().dtype(outDtype));
  if (len == 0) return out;
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, outDtype, "dequantize_sum_int8_cuda", [&] {
    dequantizeSumKernel<scalar_t><<<gridFor(len, kThreads), kThreads, 0, stream>>>(
        q.const_data_ptr<int8_t>(), q.size(0) > 1 ? q.stride(0) : 0, scale.const_data_ptr<float>(), scale.size(1),
        q.size(0), len, group, period, exact32.defined() ? exact32.const_data_ptr<float>() : nullptr, exactRow,
        out.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

at::Tensor dequantizeSumRequantizeInt8Cuda(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                                           int64_t blockSize, int64_t paddedLen, const std::optional<at::Tensor>& exact,
                                           int64_t exactRow) {
  TORCH_CHECK_VALUE(blockSize > 0, "dequantize_sum_requantize_int8: block_size must be > 0, got ", blockSize);
  TORCH_CHECK_VALUE(paddedLen >= q.size(1), "dequantize_sum_requantize_int8: padded_len ", paddedLen,
                    " is shorter than the rows (", q.size(1), " elements)");
  // Two kernels with a float32 shard between them (the GPU's caching allocator makes that cheap).
  at::Tensor reduced = dequantizeSumInt8Cuda(q, scale, group, period, at::kFloat, exact, exactRow);
  if (paddedLen > reduced.numel()) {
    at::Tensor padded = at::zeros({paddedLen}, reduced.options());
    padded.narrow(0, 0, reduced.numel()).copy_(reduced);
    reduced = padded;
  }
  return quantizeInt8PackedCuda(reduced, blockSize, std::max<int64_t>(numBlocks(paddedLen, blockSize), 1), false, -1);
}

}  // namespace quant
}  // namespace atb_ops
