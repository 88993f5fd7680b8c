// CUDA kernels of the int8 block quantisation (definitions in quant.h); built only when torch has CUDA.
// Same arithmetic as the CPU kernels: IEEE division (__fdiv_rn), round half to even (rintf), no fused
// multiply-add (setup.py passes --fmad=false), float32 accumulation over rows in row order.
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <limits>

#include "quant/quant.h"

namespace atb_ops {
namespace quant {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int kWarpsPerCta = kThreads / kWarp;
constexpr unsigned long long kNoBadBlock = std::numeric_limits<unsigned long long>::max();

// One warp per quantisation block: absmax (and a non-finite flag) by warp shuffles, then the codes.
// x: [numel]; q: [numel]; scale: [blocks]; firstBad: lowest block index holding NaN / inf.
template <typename T>
__global__ void quantizeKernel(const T* __restrict__ x, int64_t numel, int64_t blockSize, int64_t blocks,
                               int8_t* __restrict__ q, float* __restrict__ scale, bool markNonFinite,
                               unsigned long long* firstBad) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warpsTotal = static_cast<int64_t>(gridDim.x) * kWarpsPerCta;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * kWarpsPerCta + threadIdx.x / kWarp; b < blocks;
       b += warpsTotal) {
    const int64_t start = b * blockSize;
    const int64_t len = min(blockSize, numel - start);
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
      for (int64_t i = lane; i < len; i += kWarp) q[start + i] = 0;
      if (lane == 0) {
        scale[b] = markNonFinite ? __int_as_float(0x7fc00000) : 0.0f;
        atomicMin(firstBad, static_cast<unsigned long long>(b));
      }
      continue;
    }
    const float s = __fdiv_rn(absmax, 127.0f);
    if (lane == 0) scale[b] = s;
    for (int64_t i = lane; i < len; i += kWarp) {
      int8_t code = 0;
      if (s != 0.0f) {
        float v = __fdiv_rn(static_cast<float>(x[start + i]), s);
        v = v < -127.0f ? -127.0f : v;
        v = v > 127.0f ? 127.0f : v;
        code = static_cast<int8_t>(static_cast<int>(rintf(v)));
      }
      q[start + i] = code;
    }
  }
}

// out[i] = sum over rows r of float(q[r][i]) * scale[r][(i / group) % period], rows in order.
template <typename OutT>
__global__ void dequantizeSumKernel(const int8_t* __restrict__ q, int64_t qRowStride, const float* __restrict__ scale,
                                    int64_t nScales, int64_t rows, int64_t len, int64_t group, int64_t period,
                                    OutT* __restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < len; i += stride) {
    const int64_t k = (i / group) % period;
    float acc = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float term = __fmul_rn(static_cast<float>(q[r * qRowStride + i]), scale[r * nScales + k]);
      acc = r == 0 ? term : __fadd_rn(acc, term);
    }
    out[i] = static_cast<OutT>(acc);
  }
}

int gridFor(int64_t work, int perCta) {
  const int64_t ctas = (work + perCta - 1) / perCta;
  int device = 0;
  int sms = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int64_t cap = static_cast<int64_t>(std::max(sms, 1)) * 32;
  return static_cast<int>(std::max<int64_t>(1, std::min(ctas, cap)));
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> quantizeInt8Cuda(const at::Tensor& x, int64_t blockSize, bool raiseOnNonFinite) {
  checkQuantizeArgs(x, blockSize);
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor xc = x.contiguous();
  const int64_t numel = xc.numel();
  const int64_t blocks = numBlocks(numel, blockSize);
  at::Tensor q = at::empty(xc.sizes(), xc.options().dtype(at::kChar));
  at::Tensor scale = at::empty({blocks}, xc.options().dtype(at::kFloat));
  if (numel == 0) return {q, scale};
  at::Tensor firstBad = at::full({1}, -1, xc.options().dtype(at::kLong));  // all bits set: kNoBadBlock
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "quantize_int8_cuda", [&] {
    quantizeKernel<scalar_t><<<gridFor(blocks, kWarpsPerCta), kThreads, 0, stream>>>(
        xc.const_data_ptr<scalar_t>(), numel, blockSize, blocks, q.mutable_data_ptr<int8_t>(),
        scale.mutable_data_ptr<float>(), !raiseOnNonFinite,
        reinterpret_cast<unsigned long long*>(firstBad.mutable_data_ptr<int64_t>()));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  if (raiseOnNonFinite) {
    const auto bad = static_cast<unsigned long long>(firstBad.item<int64_t>());  // synchronises
    TORCH_CHECK_VALUE(bad == kNoBadBlock, "quantize_int8: x holds a non-finite value in block ", bad, " of ", blocks,
                      " (block_size ", blockSize,
                      "); int8 cannot represent NaN or infinity. Clean the input (torch.nan_to_num) first.");
  }
  return {q, scale};
}

at::Tensor dequantizeSumInt8Cuda(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                                 c10::ScalarType outDtype) {
  checkDequantizeSumArgs(q, scale, group, period, outDtype);
  const c10::cuda::CUDAGuard guard(q.device());
  const int64_t len = q.size(1);
  at::Tensor out = at::empty({len}, q.options().dtype(outDtype));
  if (len == 0) return out;
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, outDtype, "dequantize_int8_cuda", [&] {
    dequantizeSumKernel<scalar_t><<<gridFor(len, kThreads), kThreads, 0, stream>>>(
        q.const_data_ptr<int8_t>(), q.size(0) > 1 ? q.stride(0) : 0, scale.const_data_ptr<float>(), scale.size(1),
        q.size(0), len, group, period, out.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

}  // namespace quant
}  // namespace atb_ops
