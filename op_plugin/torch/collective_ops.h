// The kernels of torch.ops.atb_ops.* (registered in collective_ops.cpp): each resolves `comm` (a communicator
// handle, comm_handles.h) and runs the collective's one body (csrc/framework/collectives.h) with the GIL
// released. atb_ops.distributed's direct path (op_plugin/python/direct_collectives.cpp) runs the same bodies.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include <c10/util/OptionalArrayRef.h>

namespace atb_ops::collectives {

at::Tensor allToAllV(const at::Tensor& x, c10::IntArrayRef sendCounts, c10::IntArrayRef sdispls,
                     c10::IntArrayRef recvCounts, c10::IntArrayRef rdispls, int64_t comm);
void alltoallSingle(at::Tensor out, const at::Tensor& in, c10::OptionalIntArrayRef outSplits,
                    c10::OptionalIntArrayRef inSplits, int64_t comm);
at::Tensor allToAll(const at::Tensor& x, int64_t comm);
at::Tensor globalScatter(const at::Tensor& x, c10::IntArrayRef local, c10::IntArrayRef global, int64_t comm);
at::Tensor globalGather(const at::Tensor& x, c10::IntArrayRef local, c10::IntArrayRef global, int64_t comm);

at::Tensor allGather(const at::Tensor& x, int64_t comm);

at::Tensor allReduce(const at::Tensor& x, c10::string_view op, int64_t comm);

at::Tensor reduceScatter(const at::Tensor& x, c10::string_view op, int64_t comm);

at::Tensor broadcast(const at::Tensor& x, int64_t root, int64_t comm);

// The int8 pipeline of quant/int8_all_reduce.h: the one implementation behind AllReduceOperation's quantType
// and atb_ops.quant.quantized_all_reduce of an int8 x. x: int8, any shape; scale: [1] or [x.shape[-1]].
// returns x's shape in outDtype: sum_r (float(x_r) + offset) * scale_r.
at::Tensor int8AllReduce(const at::Tensor& x, const at::Tensor& scale, bool perChannel, double offset,
                         c10::ScalarType outDtype, int64_t blockSize, bool quantizeAllgather, int64_t comm);

}  // namespace atb_ops::collectives
