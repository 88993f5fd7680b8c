// The int8 all-reduce pipeline of seed 004 (Ascend's low-bit path: a2a = alltoall(int8), rs = sum(a2a * scale),
// out = allgather(rs)), shared by AllReduceOperation's quantType and atb_ops.quant.quantized_all_reduce:
//   1. each rank sends shard j of its int8 codes, with that shard's float32 scales and its offset, to rank j;
//   2. rank j dequantises and sums its shard in float32, in rank order: sum_r (float(q_r) + offset_r) * scale_r;
//   3. the reduced shards are all-gathered, in the output dtype or re-quantised per block.
// Shards are whole blocks of `blockSize` (the last ones short or empty), so re-quantised shards keep block
// boundaries; every rank gets bit-identical results.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "comm/communicator.h"

namespace atb_ops::quant {

struct Int8AllReduceArgs {
  at::Tensor scale;  // float32 on x's device: [1] (per tensor) or [x.shape[-1]] (per channel)
  bool perChannel = false;
  double offset = 0.0;  // added to every code before scaling (ATB's offset)
  c10::ScalarType outDtype = at::kHalf;
  int64_t blockSize = 128;
  bool quantizeAllgather = false;
};

// x: int8, any shape, contiguous. returns: x's shape, args.outDtype.
at::Tensor int8AllReduce(Communicator& comm, const at::Tensor& x, const Int8AllReduceArgs& args);

}  // namespace atb_ops::quant
