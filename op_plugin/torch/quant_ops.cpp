// torch.ops.atb_ops quantisation ops (kernels in csrc/quant/). Fake kernels are in python/atb_ops/quant.py.
// The atb_ops namespace is shared with the collectives (collective_ops.cpp): FRAGMENT, never TORCH_LIBRARY.
#include <torch/library.h>

#include "quant/quant.h"

TORCH_LIBRARY_FRAGMENT(atb_ops, m) {
  // Public: atb_ops.quant.quantize_int8 / dequantize_int8.
  m.def("quantize_int8(Tensor x, int block_size=128, bool raise_on_nonfinite=True) -> (Tensor q, Tensor scale)");
  m.def("dequantize_int8(Tensor q, Tensor scale, ScalarType dtype, int block_size=128) -> Tensor");
  // The pipeline's steps: the packed wire format ([codes | scales] per shard) and the reduce.
  m.def(
      "quantize_int8_packed(Tensor x, int block_size, int shard_blocks, bool raise_on_nonfinite, int skip_shard=-1) "
      "-> Tensor");
  m.def(
      "dequantize_int8_packed(Tensor packed, int numel, int block_size, int shard_blocks, ScalarType dtype) "
      "-> Tensor");
  m.def(
      "dequantize_sum_int8(Tensor q, Tensor scale, int group, int period, ScalarType out_dtype, Tensor? exact=None, "
      "int exact_row=0) -> Tensor");
  m.def(
      "dequantize_sum_requantize_int8(Tensor q, Tensor scale, int group, int period, int block_size, "
      "int padded_len, Tensor? exact=None, int exact_row=0) -> Tensor");
}

TORCH_LIBRARY_IMPL(atb_ops, CPU, m) {
  using namespace atb_ops::quant;
  m.impl("quantize_int8", &quantizeInt8Cpu);
  m.impl("dequantize_int8", &dequantizeInt8Cpu);
  m.impl("quantize_int8_packed", &quantizeInt8PackedCpu);
  m.impl("dequantize_int8_packed", &dequantizeInt8PackedCpu);
  m.impl("dequantize_sum_int8", &dequantizeSumInt8Cpu);
  m.impl("dequantize_sum_requantize_int8", &dequantizeSumRequantizeInt8Cpu);
}

#ifdef ATB_OPS_QUANT_CUDA
TORCH_LIBRARY_IMPL(atb_ops, CUDA, m) {
  using namespace atb_ops::quant;
  m.impl("quantize_int8", &quantizeInt8Cuda);
  m.impl("dequantize_int8", &dequantizeInt8Cuda);
  m.impl("quantize_int8_packed", &quantizeInt8PackedCuda);
  m.impl("dequantize_int8_packed", &dequantizeInt8PackedCuda);
  m.impl("dequantize_sum_int8", &dequantizeSumInt8Cuda);
  m.impl("dequantize_sum_requantize_int8", &dequantizeSumRequantizeInt8Cuda);
}
#endif
