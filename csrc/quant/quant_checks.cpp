#include <algorithm>

#include "quant/quant.h"

namespace atb_ops::quant {

bool isQuantFloating(c10::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 || t == at::kFloat || t == at::kDouble;
}

void checkQuantizeArgs(const at::Tensor& x, int64_t blockSize) {
  // Dtype and block checks
  TORCH_CHECK_TYPE(isQuantFloating(x.scalar_type()),
                   "quantize_int8: x must be float16, bfloat16, float32 or float64, got ", x.scalar_type());
  TORCH_CHECK_VALUE(blockSize > 0, "quantize_int8: block_size must be > 0, got ", blockSize);
}

void checkPackedArgs(int64_t blockSize, int64_t shardBlocks) {
  TORCH_CHECK_VALUE(blockSize > 0, "quantize_int8_packed: block_size must be > 0, got ", blockSize);
  TORCH_CHECK_VALUE(shardBlocks > 0, "quantize_int8_packed: shard_blocks must be > 0, got ", shardBlocks);
}

void checkDequantizeArgs(const at::Tensor& q, const at::Tensor& scale, c10::ScalarType dtype, int64_t blockSize) {
  TORCH_CHECK_TYPE(q.scalar_type() == at::kChar, "dequantize_int8: q must be int8, got ", q.scalar_type());
  TORCH_CHECK_TYPE(scale.scalar_type() == at::kFloat, "dequantize_int8: scale must be float32, got ",
                   scale.scalar_type());
  TORCH_CHECK_TYPE(isQuantFloating(dtype), "dequantize_int8: dtype must be floating, got ", dtype);
  TORCH_CHECK_VALUE(blockSize > 0, "dequantize_int8: block_size must be > 0, got ", blockSize);
  const int64_t blocks = numBlocks(q.numel(), blockSize);
  TORCH_CHECK_VALUE(scale.dim() == 1 && scale.numel() == blocks, "dequantize_int8: q has ", q.numel(),
                    " elements, so block_size ", blockSize, " needs scale of shape [", blocks, "], got ",
                    scale.sizes());
}

void checkDequantizePackedArgs(const at::Tensor& packed, int64_t numel, int64_t blockSize, int64_t shardBlocks,
                               c10::ScalarType dtype) {
  TORCH_CHECK_TYPE(packed.scalar_type() == at::kChar, "dequantize_int8_packed: packed must be int8, got ",
                   packed.scalar_type());
  TORCH_CHECK_TYPE(isQuantFloating(dtype), "dequantize_int8_packed: dtype must be floating, got ", dtype);
  checkPackedArgs(blockSize, shardBlocks);
  TORCH_CHECK_VALUE(numel >= 0, "dequantize_int8_packed: numel must be >= 0, got ", numel);
  const int64_t bytes = numel + 4 * numBlocks(numel, blockSize);  // the codes, then a float32 scale per block
  TORCH_CHECK_VALUE(packed.dim() == 1 && packed.numel() == bytes, "dequantize_int8_packed: ", numel,
                    " elements in blocks of ", blockSize, " pack into ", bytes, " bytes, got shape ", packed.sizes());
}

void checkDequantizeSumArgs(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                            c10::ScalarType outDtype) {
  // Dtype checks
  TORCH_CHECK_TYPE(q.scalar_type() == at::kChar, "dequantize: q must be int8, got ", q.scalar_type());
  TORCH_CHECK_TYPE(scale.scalar_type() == at::kFloat, "dequantize: scale must be float32, got ", scale.scalar_type());
  TORCH_CHECK_TYPE(isQuantFloating(outDtype), "dequantize: dtype must be float16, bfloat16, float32 or float64, got ",
                   outDtype);
  // Shape and layout checks: q [rows, len] with unit inner stride, scale [rows, nScales] contiguous
  TORCH_CHECK_VALUE(q.dim() == 2 && scale.dim() == 2, "dequantize_sum: q and scale must be 2-D, got q ", q.sizes(),
                    " and scale ", scale.sizes());
  TORCH_CHECK_VALUE(q.size(0) == scale.size(0), "dequantize_sum: q has ", q.size(0), " rows but scale has ",
                    scale.size(0));
  TORCH_CHECK_VALUE(q.size(1) <= 1 || q.stride(1) == 1, "dequantize_sum: q rows must be contiguous, strides ",
                    q.strides());
  TORCH_CHECK_VALUE(scale.is_contiguous(), "dequantize_sum: scale must be contiguous, strides ", scale.strides());
  TORCH_CHECK_VALUE(q.device() == scale.device(), "dequantize: q is on ", q.device(), " but scale on ", scale.device());
  TORCH_CHECK_VALUE(group >= 1 && period >= 1, "dequantize_sum: group and period must be >= 1, got group ", group,
                    " period ", period);
  const int64_t len = q.size(1);
  const int64_t needed = len == 0 ? 0 : std::min(numBlocks(len, group), period);
  TORCH_CHECK_VALUE(scale.size(1) >= needed, "dequantize: ", len, " elements with group ", group, " and period ",
                    period, " need ", needed, " scales per row, got ", scale.size(1));
}

void checkExactTerm(const at::Tensor& exact, int64_t exactRow, const at::Tensor& q) {
  TORCH_CHECK_TYPE(isQuantFloating(exact.scalar_type()), "dequantize_sum: exact must be floating, got ",
                   exact.scalar_type());
  TORCH_CHECK_VALUE(exact.dim() == 1 && exact.numel() == q.size(1), "dequantize_sum: exact must be [", q.size(1),
                    "] like the rows, got ", exact.sizes());
  TORCH_CHECK_VALUE(exact.device() == q.device(), "dequantize_sum: exact is on ", exact.device(), " but q on ",
                    q.device());
  TORCH_CHECK_VALUE(exactRow >= 0 && exactRow <= q.size(0), "dequantize_sum: exact_row must be in [0, ", q.size(0),
                    "], got ", exactRow);
}

}  // namespace atb_ops::quant
