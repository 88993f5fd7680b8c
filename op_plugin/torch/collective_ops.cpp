// torch.ops.atb_ops.*: the collectives as dispatcher ops, so torch.compile and torch.library see them.
// Each takes `comm`, a communicator handle (comm_handles.h) the Python package resolved once per group.
// Fake (meta) kernels and autograd are registered in python/atb_ops/_ops.py.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "core/dtype.h"
#include "core/layout.h"
#include "core/reduce.h"
#include "core/status.h"
#include "op_plugin/torch/comm_handles.h"
#include "op_plugin/torch/gil_release.h"
#include "quant/int8_all_reduce.h"

namespace atb_ops {
namespace {

void checkInput(const at::Tensor& x, const char* op) {
  checkSupportedDtype(x.scalar_type(), std::string(op) + " input x");
  ATB_CHECK(x.is_contiguous(), ERROR_INVALID_PARAM, op, " input x must be contiguous (strides ", x.strides(), ")");
}

// x: any shape, contiguous; counts/displacements in elements of x flattened. returns: [sum(recv_counts)]
at::Tensor allToAllV(const at::Tensor& x, c10::IntArrayRef sendCounts, c10::IntArrayRef sdispls,
                     c10::IntArrayRef recvCounts, c10::IntArrayRef rdispls, int64_t comm) {
  checkInput(x, "all_to_all_v");
  const auto c = communicatorOf(comm);
  const AllToAllVLayout layout{sendCounts.vec(), sdispls.vec(), recvCounts.vec(), rdispls.vec()};
  const int64_t total = validateLayout(layout, c->size(), x.numel());
  GilRelease unlocked;
  at::Tensor out = c->emptyOutput({total}, x.options());
  c->alltoallv(x, layout, out);
  return out;
}

// x: [d0, *]; returns [size * d0, *] (rank-order concatenation on dim 0).
at::Tensor allGather(const at::Tensor& x, int64_t comm) {
  checkInput(x, "all_gather");
  ATB_CHECK(x.dim() >= 1, ERROR_INVALID_TENSOR_DIM, "all_gather input x needs at least 1 dimension, got shape ",
            x.sizes());
  const auto c = communicatorOf(comm);
  std::vector<int64_t> shape = x.sizes().vec();
  shape[0] *= c->size();
  GilRelease unlocked;
  at::Tensor out = c->emptyOutput(shape, x.options());
  c->allgather(x, out);
  return out;
}

// returns the reduction over ranks of x, shaped like x.
at::Tensor allReduce(const at::Tensor& x, c10::string_view op, int64_t comm) {
  checkInput(x, "all_reduce");
  const ReduceOp reduce = parseReduceOp(std::string(op), "all_reduce op");
  const auto c = communicatorOf(comm);
  GilRelease unlocked;
  at::Tensor out = c->emptyOutput(x.sizes(), x.options());
  c->allreduce(x, out, reduce);
  return out;
}

// x: [size * d0, *]; returns [d0, *], the reduction over ranks of chunk `rank` of dim 0.
at::Tensor reduceScatter(const at::Tensor& x, c10::string_view op, int64_t comm) {
  checkInput(x, "reduce_scatter");
  const ReduceOp reduce = parseReduceOp(std::string(op), "reduce_scatter op");
  const auto c = communicatorOf(comm);
  ATB_CHECK(x.dim() >= 1 && x.size(0) % c->size() == 0, ERROR_INVALID_TENSOR_DIM,
            "reduce_scatter input x needs dim 0 divisible by the group size ", c->size(), ", got shape ", x.sizes());
  std::vector<int64_t> shape = x.sizes().vec();
  shape[0] /= c->size();
  GilRelease unlocked;
  at::Tensor out = c->emptyOutput(shape, x.options());
  c->reduceScatter(x, out, reduce);
  return out;
}

// returns root's x on every rank (x is not modified).
at::Tensor broadcast(const at::Tensor& x, int64_t root, int64_t comm) {
  checkInput(x, "broadcast");
  const auto c = communicatorOf(comm);
  ATB_CHECK(root >= 0 && root < c->size(), ERROR_INVALID_PARAM, "broadcast root is ", root, "; must be in [0, ",
            c->size(), ")");
  GilRelease unlocked;
  at::Tensor out = c->emptyOutput(x.sizes(), x.options());
  if (c->rank() == root) out.copy_(x);
  c->broadcast(out, static_cast<int32_t>(root));
  return out;
}

// The int8 pipeline of quant/int8_all_reduce.h: the one implementation behind AllReduceOperation's quantType
// and atb_ops.quant.quantized_all_reduce of an int8 x. x: int8, any shape; scale: [1] or [x.shape[-1]].
// returns x's shape in out_dtype: sum_r (float(x_r) + offset) * scale_r.
at::Tensor int8AllReduce(const at::Tensor& x, const at::Tensor& scale, bool perChannel, double offset,
                         c10::ScalarType outDtype, int64_t blockSize, bool quantizeAllgather, int64_t comm) {
  ATB_CHECK(x.scalar_type() == at::kChar, ERROR_INVALID_TENSOR_DTYPE, "int8_all_reduce input x must be int8, got ",
            x.scalar_type());
  ATB_CHECK(x.is_contiguous(), ERROR_INVALID_PARAM, "int8_all_reduce input x must be contiguous (strides ", x.strides(),
            ")");
  const int64_t channels = x.dim() == 0 ? 1 : x.size(-1);
  ATB_CHECK(scale.numel() == (perChannel ? channels : 1), ERROR_INVALID_TENSOR_SIZE, "int8_all_reduce scale has ",
            scale.numel(), " elements; ", perChannel ? "per channel" : "per tensor", " needs ",
            perChannel ? channels : 1);
  ATB_CHECK(blockSize > 0, ERROR_INVALID_PARAM, "int8_all_reduce block_size is ", blockSize, "; must be > 0");
  const auto c = communicatorOf(comm);
  quant::Int8AllReduceArgs args;
  args.scale = scale.reshape({-1}).to(x.device(), at::kFloat);
  args.perChannel = perChannel;
  args.offset = offset;
  args.outDtype = outDtype;
  args.blockSize = blockSize;
  args.quantizeAllgather = quantizeAllgather;
  GilRelease unlocked;
  return quant::int8AllReduce(*c, x, args);
}

}  // namespace
}  // namespace atb_ops

TORCH_LIBRARY_FRAGMENT(atb_ops, m) {
  m.def(
      "all_to_all_v(Tensor x, int[] send_counts, int[] sdispls, int[] recv_counts, int[] rdispls, int comm) -> Tensor");
  m.def("all_gather(Tensor x, int comm) -> Tensor");
  m.def("all_reduce(Tensor x, str op, int comm) -> Tensor");
  m.def("reduce_scatter(Tensor x, str op, int comm) -> Tensor");
  m.def("broadcast(Tensor x, int root, int comm) -> Tensor");
  m.def(
      "int8_all_reduce(Tensor x, Tensor scale, bool per_channel, float offset, ScalarType out_dtype, int block_size, "
      "bool quantize_allgather, int comm) -> Tensor");
}

#define ATB_OPS_COLLECTIVE_IMPLS(m)                  \
  m.impl("all_to_all_v", &atb_ops::allToAllV);       \
  m.impl("all_gather", &atb_ops::allGather);         \
  m.impl("all_reduce", &atb_ops::allReduce);         \
  m.impl("reduce_scatter", &atb_ops::reduceScatter); \
  m.impl("broadcast", &atb_ops::broadcast);          \
  m.impl("int8_all_reduce", &atb_ops::int8AllReduce)

TORCH_LIBRARY_IMPL(atb_ops, CPU, m) {
  ATB_OPS_COLLECTIVE_IMPLS(m);
}

TORCH_LIBRARY_IMPL(atb_ops, CUDA, m) {
  ATB_OPS_COLLECTIVE_IMPLS(m);
}

TORCH_LIBRARY_IMPL(atb_ops, PrivateUse1, m) {
  ATB_OPS_COLLECTIVE_IMPLS(m);
}
