#include "quant/int8_all_reduce.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>

#include <algorithm>

#include "core/layout.h"
#include "core/status.h"
#include "quant/quant.h"

namespace atb_ops::quant {
namespace {

constexpr int64_t kScaleBytes = 4;  // float32 scales and offsets travel as raw bytes

struct Plan {
  int64_t numel;
  int32_t ranks;
  int64_t shard;  // elements per full shard
  bool perChannel;
  int64_t channels;

  int64_t begin(int32_t j) const { return std::min(numel, j * shard); }
  int64_t length(int32_t j) const { return std::min(numel, (j + 1) * shard) - begin(j); }
  int64_t scales(int32_t j) const { return std::min(length(j), perChannel ? channels : 1); }
  // Codes, scales and the offset of shard j (nothing for an empty shard).
  int64_t bytes(int32_t j) const { return length(j) == 0 ? 0 : length(j) + kScaleBytes * (scales(j) + 1); }
};

at::Tensor asBytes(const at::Tensor& t) {
  return t.contiguous().view({-1}).view(at::kChar);
}

// scale[(start + k) % C] for k < count: the per-channel scales of a shard that starts at element `start`.
at::Tensor channelSlice(const at::Tensor& scale, int64_t start, int64_t count) {
  const int64_t channels = scale.numel();
  const int64_t first = start % channels;
  if (first + count <= channels) return scale.narrow(0, first, count);
  return at::cat({scale.narrow(0, first, channels - first), scale.narrow(0, 0, count - (channels - first))});
}

at::Tensor dequantizeSum(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                         c10::ScalarType out, const std::optional<at::Tensor>& exact, int64_t exactRow) {
#ifdef ATB_OPS_QUANT_CUDA
  if (q.is_cuda()) return dequantizeSumInt8Cuda(q, scale, group, period, out, exact, exactRow);
#endif
  return dequantizeSumInt8Cpu(q, scale, group, period, out, exact, exactRow);
}

at::Tensor dequantizeSumRequantize(const at::Tensor& q, const at::Tensor& scale, int64_t group, int64_t period,
                                   int64_t blockSize, int64_t paddedLen, const std::optional<at::Tensor>& exact,
                                   int64_t exactRow) {
#ifdef ATB_OPS_QUANT_CUDA
  if (q.is_cuda()) {
    return dequantizeSumRequantizeInt8Cuda(q, scale, group, period, blockSize, paddedLen, exact, exactRow);
  }
#endif
  return dequantizeSumRequantizeInt8Cpu(q, scale, group, period, blockSize, paddedLen, exact, exactRow);
}

at::Tensor dequantizePacked(const at::Tensor& packed, int64_t numel, int64_t blockSize, int64_t shardBlocks,
                            c10::ScalarType dtype) {
#ifdef ATB_OPS_QUANT_CUDA
  if (packed.is_cuda()) return dequantizeInt8PackedCuda(packed, numel, blockSize, shardBlocks, dtype);
#endif
  return dequantizeInt8PackedCpu(packed, numel, blockSize, shardBlocks, dtype);
}

}  // namespace

at::Tensor int8AllReduce(Communicator& comm, const at::Tensor& x, const Int8AllReduceArgs& a) {
  ATB_CHECK(x.scalar_type() == at::kChar, ERROR_INVALID_TENSOR_DTYPE, "int8 all-reduce: x must be int8, got ",
            x.scalar_type());
  const int32_t n = comm.size();
  const int32_t me = comm.rank();
  const int64_t numel = x.numel();
  const int64_t bs = a.blockSize;
  Plan plan{numel, n, numBlocks(numBlocks(numel, bs), n) * bs, a.perChannel, std::max<int64_t>(a.scale.numel(), 1)};
  if (numel == 0) return at::empty(x.sizes(), x.options().dtype(a.outDtype));
  const at::Tensor flat = x.contiguous().view({-1});
  const at::Tensor scale = a.scale.to(at::kFloat).contiguous().view({-1});
  const at::Tensor offset = at::full({1}, a.offset, scale.options());

  // 1. [codes | scales | offset] of every shard, for its owner; the rank's own travels to itself too, so
  //    every rank sums the same terms in the same order.
  std::vector<at::Tensor> pieces;
  AllToAllVLayout layout;
  int64_t sent = 0;
  for (int32_t j = 0; j < n; ++j) {
    const int64_t bytes = plan.bytes(j);
    layout.sendCounts.push_back(bytes);
    layout.sdispls.push_back(sent);
    layout.recvCounts.push_back(plan.bytes(me));
    layout.rdispls.push_back(static_cast<int64_t>(j) * plan.bytes(me));
    sent += bytes;
    if (bytes == 0) continue;
    const int64_t lo = plan.begin(j);
    const at::Tensor s = a.perChannel ? channelSlice(scale, lo, plan.scales(j)) : scale.narrow(0, 0, 1);
    pieces.push_back(flat.narrow(0, lo, plan.length(j)));
    pieces.push_back(asBytes(s));
    pieces.push_back(asBytes(offset));
  }
  const at::Tensor send = at::cat(pieces);
  at::Tensor received = at::empty({n * plan.bytes(me)}, send.options());
  validateLayout(layout, n, send.numel(), received.numel());
  comm.alltoallv(send, layout, received);

  // 2. This rank's shard: sum_r float(q_r) * scale_r, plus the offsets' share sum_r offset_r * scale_r.
  const int64_t len = plan.length(me);
  at::Tensor reduced;
  std::optional<at::Tensor> exact;
  int64_t group = 1;
  int64_t period = 1;
  at::Tensor codes;
  at::Tensor scales;
  if (len > 0) {
    const int64_t nScales = plan.scales(me);
    const at::Tensor rows = received.view({n, plan.bytes(me)});
    codes = rows.narrow(1, 0, len);
    scales = rows.narrow(1, len, kScaleBytes * nScales).clone(at::MemoryFormat::Contiguous).view(at::kFloat);
    const at::Tensor offsets =
        rows.narrow(1, len + kScaleBytes * nScales, kScaleBytes).clone(at::MemoryFormat::Contiguous).view(at::kFloat);
    group = a.perChannel ? 1 : len;
    period = nScales;
    if (a.offset != 0.0 || offsets.ne(0).any().item<bool>()) {
      const at::Tensor perScale = offsets.mul(scales).sum(0);  // [nScales]
      exact = a.perChannel ? perScale.repeat({numBlocks(len, nScales)}).narrow(0, 0, len) : perScale.expand({len});
      exact = exact->contiguous();
    }
  } else {
    codes = at::empty({n, 0}, received.options());
    scales = at::empty({n, 0}, received.options().dtype(at::kFloat));
  }

  // 3. All-gather the reduced shards, each padded to a full shard.
  if (!a.quantizeAllgather) {
    at::Tensor shard = at::zeros({plan.shard}, x.options().dtype(a.outDtype));
    if (len > 0) shard.narrow(0, 0, len).copy_(dequantizeSum(codes, scales, group, period, a.outDtype, exact, n));
    at::Tensor gathered = comm.emptyOutput({n * plan.shard}, shard.options());
    comm.allgather(shard, gathered);
    return gathered.narrow(0, 0, numel).view(x.sizes());
  }
  at::Tensor packed;
  if (len > 0) {
    packed = dequantizeSumRequantize(codes, scales, group, period, bs, plan.shard, exact, n);
  } else {
    packed = at::zeros({plan.shard + kScaleBytes * (plan.shard / bs)}, x.options());
  }
  at::Tensor gathered = comm.emptyOutput({n * packed.numel()}, packed.options());
  comm.allgather(packed, gathered);
  return dequantizePacked(gathered, n * plan.shard, bs, plan.shard / bs, a.outDtype)
      .narrow(0, 0, numel)
      .view(x.sizes());
}

}  // namespace atb_ops::quant
