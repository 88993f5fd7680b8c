// torch.ops.atb_ops quantisation ops (kernels in csrc/quant/). Fake kernels are in python/atb_ops/quant.py.
// The atb_ops namespace is shared with the collectives (collective_ops.cpp): FRAGMENT, never TORCH_LIBRARY.
#include <torch/library.h>

#include "quant/quant.h"

namespace atb_ops {
namespace quant {
namespace {

using DequantizeSumFn = at::Tensor (*)(const at::Tensor&, const at::Tensor&, int64_t, int64_t, c10::ScalarType);

// q: any shape int8; scale: [ceil(q.numel() / block_size)] float32. returns: q's shape, `dtype`.
template <DequantizeSumFn kernel>
at::Tensor dequantizeInt8(const at::Tensor& q, const at::Tensor& scale, c10::ScalarType dtype, int64_t blockSize) {
  // Shape checks (dtype checks are the kernel's)
  TORCH_CHECK_VALUE(blockSize > 0, "dequantize_int8: block_size must be > 0, got ", blockSize);
  const int64_t numel = q.numel();
  const int64_t blocks = numBlocks(numel, blockSize);
  TORCH_CHECK_VALUE(scale.dim() == 1 && scale.numel() == blocks, "dequantize_int8: q has ", numel,
                    " elements, so block_size ", blockSize, " needs scale of shape [", blocks, "], got ",
                    scale.sizes());
  const at::Tensor flat = q.contiguous().view({1, numel});
  const at::Tensor out = kernel(flat, scale.contiguous().view({1, blocks}), blockSize, std::max<int64_t>(blocks, 1),
                                dtype);
  return out.view(q.sizes());
}

}  // namespace
}  // namespace quant
}  // namespace atb_ops

TORCH_LIBRARY_FRAGMENT(atb_ops, m) {
  m.def("quantize_int8(Tensor x, int block_size=128, bool raise_on_nonfinite=True) -> (Tensor q, Tensor scale)");
  m.def("dequantize_int8(Tensor q, Tensor scale, ScalarType dtype, int block_size=128) -> Tensor");
  m.def("dequantize_sum_int8(Tensor q, Tensor scale, int group, int period, ScalarType out_dtype) -> Tensor");
}

TORCH_LIBRARY_IMPL(atb_ops, CPU, m) {
  using namespace atb_ops::quant;
  m.impl("quantize_int8", &quantizeInt8Cpu);
  m.impl("dequantize_int8", &dequantizeInt8<&dequantizeSumInt8Cpu>);
  m.impl("dequantize_sum_int8", &dequantizeSumInt8Cpu);
}

#ifdef ATB_OPS_QUANT_CUDA
TORCH_LIBRARY_IMPL(atb_ops, CUDA, m) {
  using namespace atb_ops::quant;
  m.impl("quantize_int8", &quantizeInt8Cuda);
  m.impl("dequantize_int8", &dequantizeInt8<&dequantizeSumInt8Cuda>);
  m.impl("dequantize_sum_int8", &dequantizeSumInt8Cuda);
}
#endif
