// torch.ops.atb_ops.*: the framework collectives as dispatcher ops, so autograd, torch.compile, profilers and
// torch.library see them. Each is a thin wrapper over its one body in csrc/framework/collectives.h (which
// checks and runs); `comm` is a communicator handle (comm_handles.h) the Python package resolved per group.
// Fake (meta) kernels and autograd are registered in python/atb_ops/_ops.py.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "comm/call_signature.h"
#include "core/status.h"
#include "framework/collectives.h"
#include "op_plugin/torch/collective_ops.h"
#include "op_plugin/torch/comm_handles.h"
#include "op_plugin/torch/gil_release.h"
#include "quant/int8_all_reduce.h"

namespace atb_ops::collectives {
namespace {

framework::Splits splitsOf(c10::OptionalIntArrayRef v) {
  return v.has_value() ? framework::Splits(v->vec()) : std::nullopt;
}

}  // namespace

at::Tensor allToAllV(const at::Tensor& x, c10::IntArrayRef sendCounts, c10::IntArrayRef sdispls,
                     c10::IntArrayRef recvCounts, c10::IntArrayRef rdispls, int64_t comm) {
  const auto c = communicatorOf(comm);
  const AllToAllVLayout layout{sendCounts.vec(), sdispls.vec(), recvCounts.vec(), rdispls.vec()};
  return blockingCall([&] { return framework::allToAllV(*c, x, layout); });
}

void alltoallSingle(at::Tensor out, const at::Tensor& in, c10::OptionalIntArrayRef outSplits,
                    c10::OptionalIntArrayRef inSplits, int64_t comm) {
  const auto c = communicatorOf(comm);
  blockingCall([&] { framework::alltoallSingle(*c, out, in, splitsOf(outSplits), splitsOf(inSplits)); });
}

at::Tensor allToAll(const at::Tensor& x, int64_t comm) {
  const auto c = communicatorOf(comm);
  return blockingCall([&] { return framework::allToAll(*c, x); });
}

at::Tensor globalScatter(const at::Tensor& x, c10::IntArrayRef local, c10::IntArrayRef global, int64_t comm) {
  const auto c = communicatorOf(comm);
  return blockingCall([&] { return framework::globalScatter(*c, x, local.vec(), global.vec()); });
}

at::Tensor globalGather(const at::Tensor& x, c10::IntArrayRef local, c10::IntArrayRef global, int64_t comm) {
  const auto c = communicatorOf(comm);
  return blockingCall([&] { return framework::globalGather(*c, x, local.vec(), global.vec()); });
}

at::Tensor allGather(const at::Tensor& x, int64_t comm) {
  const auto c = communicatorOf(comm);
  return blockingCall([&] { return framework::allGather(*c, x); });
}

at::Tensor allReduce(const at::Tensor& x, c10::string_view op, int64_t comm) {
  const auto c = communicatorOf(comm);
  return blockingCall([&] { return framework::allReduce(*c, x, std::string(op)); });
}

at::Tensor reduceScatter(const at::Tensor& x, c10::string_view op, int64_t comm) {
  const auto c = communicatorOf(comm);
  return blockingCall([&] { return framework::reduceScatter(*c, x, std::string(op)); });
}

at::Tensor broadcast(const at::Tensor& x, int64_t root, int64_t comm) {
  const auto c = communicatorOf(comm);
  return blockingCall([&] { return framework::broadcast(*c, x, root); });
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
  return blockingCall([&] { return quant::int8AllReduce(*c, x, args); });
}

}  // namespace atb_ops::collectives

TORCH_LIBRARY_FRAGMENT(atb_ops, m) {
  m.def(
      "all_to_all_v(Tensor x, int[] send_counts, int[] sdispls, int[] recv_counts, int[] rdispls, int comm) -> Tensor");
  m.def("alltoall_single(Tensor(a!) out, Tensor inp, int[]? out_split_sizes, int[]? in_split_sizes, int comm) -> ()");
  m.def("all_to_all(Tensor x, int comm) -> Tensor");
  m.def("global_scatter(Tensor x, int[] local_count, int[] global_count, int comm) -> Tensor");
  m.def("global_gather(Tensor x, int[] local_count, int[] global_count, int comm) -> Tensor");
  m.def("all_gather(Tensor x, int comm) -> Tensor");
  m.def("all_reduce(Tensor x, str op, int comm) -> Tensor");
  m.def("reduce_scatter(Tensor x, str op, int comm) -> Tensor");
  m.def("broadcast(Tensor x, int root, int comm) -> Tensor");
  m.def(
      "int8_all_reduce(Tensor x, Tensor scale, bool per_channel, float offset, ScalarType out_dtype, int block_size, "
      "bool quantize_allgather, int comm) -> Tensor");
}

#define ATB_OPS_COLLECTIVE_IMPLS(m)                                 \
  m.impl("all_to_all_v", &atb_ops::collectives::allToAllV);         \
  m.impl("alltoall_single", &atb_ops::collectives::alltoallSingle); \
  m.impl("all_to_all", &atb_ops::collectives::allToAll);            \
  m.impl("global_scatter", &atb_ops::collectives::globalScatter);   \
  m.impl("global_gather", &atb_ops::collectives::globalGather);     \
  m.impl("all_gather", &atb_ops::collectives::allGather);           \
  m.impl("all_reduce", &atb_ops::collectives::allReduce);           \
  m.impl("reduce_scatter", &atb_ops::collectives::reduceScatter);   \
  m.impl("broadcast", &atb_ops::collectives::broadcast);            \
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
