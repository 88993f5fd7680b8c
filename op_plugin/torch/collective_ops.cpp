// torch.ops.atb_ops.*: the collectives as dispatcher ops, so torch.compile and torch.library see them.
// Each takes `comm`, a communicator handle (comm_handles.h) the Python package resolved once per group.
// Fake (meta) kernels and autograd are registered in python/atb_ops/_ops.py.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "comm/call_signature.h"
#include "core/dtype.h"
#include "core/layout.h"
#include "core/reduce.h"
#include "core/status.h"
#include "op_plugin/torch/collective_ops.h"
#include "op_plugin/torch/comm_handles.h"
#include "op_plugin/torch/gil_release.h"
#include "quant/int8_all_reduce.h"

namespace atb_ops::collectives {
namespace {

void checkInput(const at::Tensor& x, const char* op) {
  checkSupportedDtype(x.scalar_type(), std::string(op) + " input x");
  ATB_CHECK(x.is_contiguous(), ERROR_INVALID_PARAM, op, " input x must be contiguous (strides ", x.strides(), ")");
}

}  // namespace

at::Tensor allToAllV(const at::Tensor& x, c10::IntArrayRef sendCounts, c10::IntArrayRef sdispls,
                     c10::IntArrayRef recvCounts, c10::IntArrayRef rdispls, int64_t comm) {
  const CallLabel label("all_to_all_v");
  checkInput(x, "all_to_all_v");
  const auto c = communicatorOf(comm);
  const AllToAllVLayout layout{sendCounts.vec(), sdispls.vec(), recvCounts.vec(), rdispls.vec()};
  const int64_t total = validateLayout(layout, c->size(), x.numel());
  GilRelease unlocked;
  at::Tensor out = c->emptyOutput({total}, x.options());
  c->alltoallv(x, layout, out);
  return out;
}

void allToAllVInto(const at::Tensor& x, const AllToAllVLayout& layout, at::Tensor& out, int64_t comm) {
  const CallLabel label("all_to_all_v");
  checkInput(x, "all_to_all_v");
  ATB_CHECK(out.is_contiguous() && out.scalar_type() == x.scalar_type() && out.device() == x.device(),
            ERROR_INVALID_PARAM, "all_to_all_v output must be contiguous, ", x.scalar_type(), " on ", x.device(),
            "; got ", out.scalar_type(), " on ", out.device(), " with strides ", out.strides());
  const auto c = communicatorOf(comm);
  validateLayout(layout, c->size(), x.numel(), out.numel());
  GilRelease unlocked;
  at::Tensor flat = out.view({-1});
  c->alltoallv(x, layout, flat);
}

at::Tensor allGather(const at::Tensor& x, int64_t comm) {
  const CallLabel label("all_gather");
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

at::Tensor allReduce(const at::Tensor& x, c10::string_view op, int64_t comm) {
  const CallLabel label("all_reduce");
  checkInput(x, "all_reduce");
  const ReduceOp reduce = parseReduceOp(std::string(op), "all_reduce op");
  const auto c = communicatorOf(comm);
  GilRelease unlocked;
  at::Tensor out = c->emptyOutput(x.sizes(), x.options());
  c->allreduce(x, out, reduce);
  return out;
}

at::Tensor reduceScatter(const at::Tensor& x, c10::string_view op, int64_t comm) {
  const CallLabel label("reduce_scatter");
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

at::Tensor broadcast(const at::Tensor& x, int64_t root, int64_t comm) {
  const CallLabel label("broadcast");
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

at::Tensor int8AllReduce(const at::Tensor& x, const at::Tensor& scale, bool perChannel, double offset,
                         c10::ScalarType outDtype, int64_t blockSize, bool quantizeAllgather, int64_t comm) {
  const CallLabel label("int8_all_reduce");
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

}  // namespace atb_ops::collectives

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

#define ATB_OPS_COLLECTIVE_IMPLS(m)                               \
  m.impl("all_to_all_v", &atb_ops::collectives::allToAllV);       \
  m.impl("all_gather", &atb_ops::collectives::allGather);         \
  m.impl("all_reduce", &atb_ops::collectives::allReduce);         \
  m.impl("reduce_scatter", &atb_ops::collectives::reduceScatter); \
  m.impl("broadcast", &atb_ops::collectives::broadcast);          \
  m.impl("int8_all_reduce", &atb_ops::collectives::int8AllReduce)

TORCH_LIBRARY_IMPL(atb_ops, CPU, m) {
  ATB_OPS_COLLECTIVE_IMPLS(m);
}

TORCH_LIBRARY_IMPL(atb_ops, CUDA, m) {
  ATB_OPS_COLLECTIVE_IMPLS(m);
}

TORCH_LIBRARY_IMPL(atb_ops, PrivateUse1, m) {
  ATB_OPS_COLLECTIVE_IMPLS(m);
}
