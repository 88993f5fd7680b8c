// Symmetric int8 block quantisation: the kernels behind atb_ops.quant (CPU here, CUDA in quant_cuda.cu).
//
// Definitions, shared by every device and by the plain-torch reference in tests/quant/quant_reference.py:
//   blocks:   x flattened, cut into blocks of `blockSize` consecutive elements (the last one may be short).
//   scale[b]: absmax(block b) / 127, computed in float32 (x converted to float32 first).
//   q[i]:     0 when scale[b] == 0 (a block of zeros, or one so small that absmax / 127 underflows);
//             otherwise round_half_to_even(clamp(float(x[i]) / scale[b], -127, 127)), an IEEE float32
//             division. -128 never occurs, so the code is symmetric.
//   dequantised value: float(q[i]) * scale[b], one float32 multiply, then a cast to the output dtype.
// Non-finite input (NaN, +-inf) in a block: with `raiseOnNonFinite` the kernel raises ValueError naming
// the first such block; otherwise that block gets scale NaN and q 0, so it dequantises to NaN (the
// collective path uses this, so one rank's NaN reaches every rank instead of leaving peers waiting).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

namespace atb_ops {
namespace quant {

// x: any shape, float16 / bfloat16 / float32 (float64 accepted); made contiguous.
// returns: q int8 shaped like x, scale float32 [ceil(numel / blockSize)].
std::tuple<at::Tensor, at::Tensor> quantizeInt8Cpu(const at::Tensor& x, int64_t blockSize, bool raiseOnNonFinite);

// q: any shape int8; scale: [ceil(q.numel() / blockSize)] float32. returns: q's shape, `dtype`.
at::Tensor dequantizeInt8Cpu(const at::Tensor& q, const at::Tensor& scale, c10::ScalarType dtype, int64_t blockSize);

// The wire format of quantized_all_reduce: x flattened, in shards of shardBlocks blocks; shard j starts at
// byte j * (shardBlocks * blockSize + 4 * shardBlocks) and holds its int8 codes, then its float32 scales
// (native byte order, possibly unaligned). Only the last non-empty shard may be short. Shard skipShard
// (-1: none; a rank's own shard, which is never sent) is left out: the shards after it move down by its size.
// returns: int8 [numel + 4 * ceil(numel / blockSize) - bytes of the skipped shard].
at::Tensor quantizeInt8PackedCpu(const at::Tensor& x, int64_t blockSize, int64_t shardBlocks, bool raiseOnNonFinite,
                                 int64_t skipShard);
// packed: int8 [numel + 4 * ceil(numel / blockSize)] in that format. returns: [numel] of `dtype`.
at::Tensor dequantizeInt8PackedCpu(const at::Tensor& packed, int64_t numel, int64_t blockSize, int64_t shardBlocks,
                                   c10::ScalarType dtype);

// The quantised all-gather's input in one pass: the row-sum of dequantizeSumInt8Cpu (float32, rows of
// length len), zero-padded to paddedLen, quantised per block into the packed format as one shard.
// returns: int8 [paddedLen + 4 * ceil(paddedLen / blockSize)]; a block with NaN / inf gets scale NaN.
at::Tensor dequantizeSumRequantizeInt8Cpu(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                                          int64_t blockSize, int64_t paddedLen, const std::optional<at::Tensor>& exact,
                                          int64_t exactRow);

// Which CPU kernels run: request "" (query), "auto", "scalar" or "avx2"; returns the active one.
std::string cpuIsa(const std::string& request);

// q: [rows, len] int8 with stride(1) == 1 (rows may be strided, e.g. views into a receive buffer);
// scale: [rows, nScales] float32, contiguous.
// exact: optional [len] floating, a rank's own values (never quantised), summed as term number exactRow.
// returns out [len] of outDtype: out[i] = sum over the terms (in order, float32) of
//   float(q[r][i]) * scale[r][(i / group) % period] for each row r, and float(exact[i]).
// group = blockSize, period = nScales: per-block scales; group = 1, period = channels: per-channel
// scales whose slice starts at this row's first element; group >= len, period = 1: one scale per row.
at::Tensor dequantizeSumInt8Cpu(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                                c10::ScalarType outDtype, const std::optional<at::Tensor>& exact, int64_t exactRow);

// The argument checks every device shares (quant_checks.cpp; they raise ValueError / TypeError naming the
// values), run before any data is read.
bool isQuantFloating(c10::ScalarType t);  // float16, bfloat16, float32 or float64
void checkQuantizeArgs(const at::Tensor& x, int64_t blockSize);
void checkPackedArgs(int64_t blockSize, int64_t shardBlocks);
void checkDequantizeArgs(const at::Tensor& q, const at::Tensor& scale, c10::ScalarType dtype, int64_t blockSize);
void checkDequantizePackedArgs(const at::Tensor& packed, int64_t numel, int64_t blockSize, int64_t shardBlocks,
                               c10::ScalarType dtype);
void checkDequantizeSumArgs(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                            c10::ScalarType outDtype);
// dequantize_sum's optional exact term: floating, [len] like q's rows, on q's device, exactRow in [0, rows].
void checkExactTerm(const at::Tensor& exact, int64_t exactRow, const at::Tensor& q);

// Number of blocks of blockSize covering numel elements.
inline int64_t numBlocks(int64_t numel, int64_t blockSize) {
  return (numel + blockSize - 1) / blockSize;
}

#ifdef ATB_OPS_QUANT_CUDA
std::tuple<at::Tensor, at::Tensor> quantizeInt8Cuda(const at::Tensor& x, int64_t blockSize, bool raiseOnNonFinite);
at::Tensor dequantizeInt8Cuda(const at::Tensor& q, const at::Tensor& scale, c10::ScalarType dtype, int64_t blockSize);
at::Tensor quantizeInt8PackedCuda(const at::Tensor& x, int64_t blockSize, int64_t shardBlocks, bool raiseOnNonFinite,
                                  int64_t skipShard);
at::Tensor dequantizeInt8PackedCuda(const at::Tensor& packed, int64_t numel, int64_t blockSize, int64_t shardBlocks,
                                    c10::ScalarType dtype);
at::Tensor dequantizeSumInt8Cuda(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                                 c10::ScalarType outDtype, const std::optional<at::Tensor>& exact, int64_t exactRow);
at::Tensor dequantizeSumRequantizeInt8Cuda(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                                           int64_t blockSize, int64_t paddedLen, const std::optional<at::Tensor>& exact,
                                           int64_t exactRow);
#endif

}  // namespace quant
}  // namespace atb_ops
