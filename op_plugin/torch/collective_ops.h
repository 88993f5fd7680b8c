// The collectives behind torch.ops.atb_ops.* (registered in collective_ops.cpp), callable directly too:
// atb_ops.distributed calls them through atb_ops._C when no dispatcher feature is needed (nothing requires
// grad, nothing traces), which saves the dispatcher's and the Python autograd wrapper's cost per call.
// Each takes `comm`, a communicator handle (comm_handles.h); each validates before communicating and
// releases the GIL while it waits.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "core/layout.h"

namespace atb_ops::collectives {

// x: any shape, contiguous; counts/displacements in elements of x flattened. returns: [sum(recvCounts)]
at::Tensor allToAllV(const at::Tensor& x, c10::IntArrayRef sendCounts, c10::IntArrayRef sdispls,
                     c10::IntArrayRef recvCounts, c10::IntArrayRef rdispls, int64_t comm);

// The same into `out` (contiguous, x's dtype and device, numel >= the layout's extent): no staging copy.
void allToAllVInto(const at::Tensor& x, const AllToAllVLayout& layout, at::Tensor& out, int64_t comm);

// x: [d0, *]; returns [size * d0, *] (rank-order concatenation on dim 0).
at::Tensor allGather(const at::Tensor& x, int64_t comm);

// returns the reduction over ranks of x, shaped like x ("sum", "prod", "max", "min").
at::Tensor allReduce(const at::Tensor& x, c10::string_view op, int64_t comm);

// x: [size * d0, *]; returns [d0, *], the reduction over ranks of chunk `rank` of dim 0.
at::Tensor reduceScatter(const at::Tensor& x, c10::string_view op, int64_t comm);

// returns root's x on every rank (x is not modified).
at::Tensor broadcast(const at::Tensor& x, int64_t root, int64_t comm);

// The int8 pipeline of quant/int8_all_reduce.h: the one implementation behind AllReduceOperation's quantType
// and atb_ops.quant.quantized_all_reduce of an int8 x. x: int8, any shape; scale: [1] or [x.shape[-1]].
// returns x's shape in outDtype: sum_r (float(x_r) + offset) * scale_r.
at::Tensor int8AllReduce(const at::Tensor& x, const at::Tensor& scale, bool perChannel, double offset,
                         c10::ScalarType outDtype, int64_t blockSize, bool quantizeAllgather, int64_t comm);

}  // namespace atb_ops::collectives
