// atb_ops._C.direct_* and check_*: atb_ops.distributed's way to the framework collectives without the
// dispatcher (when nothing requires grad, traces or profiles), and the checks it runs before a group's
// communicator exists. Thin: each converts its arguments and calls the collective's one body
// (csrc/framework/collectives.h), as the torch.ops.atb_ops kernels do; argument errors raise AtbError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/utils/pybind.h>

#include <optional>
#include <string>
#include <vector>

#include "framework/collectives.h"
#include "op_plugin/python/direct_collectives.h"
#include "op_plugin/python/python_errors.h"
#include "op_plugin/torch/comm_handles.h"
#include "op_plugin/torch/gil_release.h"

namespace py = pybind11;

namespace atb_ops {
namespace {

using Counts = std::vector<int64_t>;
using framework::Splits;

// The collective `body(communicator)` on handle `comm`, with the GIL released while it waits.
template <typename Body>
auto onComm(int64_t comm, Body&& body) {
  return withAtbErrors([&] {
    const auto c = communicatorOf(comm);
    return blockingCall([&] { return body(*c); });
  });
}

}  // namespace

bool isArgumentError(Status s) {
  switch (s) {
    case Status::ERROR_INVALID_PARAM:
    case Status::ERROR_INVALID_IN_TENSOR_NUM:
    case Status::ERROR_INVALID_TENSOR_DTYPE:
    case Status::ERROR_INVALID_TENSOR_FORMAT:
    case Status::ERROR_INVALID_TENSOR_DIM:
    case Status::ERROR_INVALID_TENSOR_SIZE:
    case Status::ERROR_INVALID_TENSOR_DIM_NUM: return true;
    default: return false;
  }
}

void bindDirectCollectives(py::module_& m) {
  m.def(
      "direct_all_to_all_v",
      [](const at::Tensor& x, Counts sc, Counts sd, Counts rc, Counts rd, int64_t comm) {
        const AllToAllVLayout layout{std::move(sc), std::move(sd), std::move(rc), std::move(rd)};
        return onComm(comm, [&](Communicator& c) { return framework::allToAllV(c, x, layout); });
      },
      py::arg("x"), py::arg("send_counts"), py::arg("sdispls"), py::arg("recv_counts"), py::arg("rdispls"),
      py::arg("comm"));
  m.def(
      "direct_alltoall_single",
      [](at::Tensor out, const at::Tensor& in, Splits outSplits, Splits inSplits, int64_t comm) {
        onComm(comm, [&](Communicator& c) {
          framework::alltoallSingle(c, out, in, outSplits, inSplits);
          return 0;
        });
        torch::autograd::impl::bump_version(out);  // as an in-place torch op would: autograd sees the write
      },
      py::arg("out"), py::arg("inp"), py::arg("out_split_sizes"), py::arg("in_split_sizes"), py::arg("comm"));
  m.def(
      "direct_all_to_all",
      [](const at::Tensor& x, int64_t comm) {
        return onComm(comm, [&](Communicator& c) { return framework::allToAll(c, x); });
      },
      py::arg("x"), py::arg("comm"));
  m.def(
      "direct_global_scatter",
      [](const at::Tensor& x, const Counts& local, const Counts& global, int64_t comm) {
        return onComm(comm, [&](Communicator& c) { return framework::globalScatter(c, x, local, global); });
      },
      py::arg("x"), py::arg("local_count"), py::arg("global_count"), py::arg("comm"));
  m.def(
      "direct_global_gather",
      [](const at::Tensor& x, const Counts& local, const Counts& global, int64_t comm) {
        return onComm(comm, [&](Communicator& c) { return framework::globalGather(c, x, local, global); });
      },
      py::arg("x"), py::arg("local_count"), py::arg("global_count"), py::arg("comm"));
  m.def(
      "direct_all_gather",
      [](const at::Tensor& x, int64_t comm) {
        return onComm(comm, [&](Communicator& c) { return framework::allGather(c, x); });
      },
      py::arg("x"), py::arg("comm"));
  m.def(
      "direct_all_reduce",
      [](const at::Tensor& x, const std::string& op, int64_t comm) {
        return onComm(comm, [&](Communicator& c) { return framework::allReduce(c, x, op); });
      },
      py::arg("x"), py::arg("op"), py::arg("comm"));
  m.def(
      "direct_reduce_scatter",
      [](const at::Tensor& x, const std::string& op, int64_t comm) {
        return onComm(comm, [&](Communicator& c) { return framework::reduceScatter(c, x, op); });
      },
      py::arg("x"), py::arg("op"), py::arg("comm"));
  m.def(
      "direct_broadcast",
      [](const at::Tensor& x, int64_t src, int64_t comm) {
        return onComm(comm, [&](Communicator& c) { return framework::broadcast(c, x, src); });
      },
      py::arg("x"), py::arg("src"), py::arg("comm"));

  // The same checks for a group of `n` ranks whose communicator is not made yet.
  m.def(
      "check_all_to_all_v",
      [](int32_t n, const at::Tensor& x, Counts sc, Counts sd, Counts rc, Counts rd) {
        withAtbErrors([&] {
          framework::checkAllToAllV(n, x, AllToAllVLayout{std::move(sc), std::move(sd), std::move(rc), std::move(rd)});
        });
      },
      py::arg("n"), py::arg("x"), py::arg("send_counts"), py::arg("sdispls"), py::arg("recv_counts"),
      py::arg("rdispls"));
  m.def(
      "check_alltoall_single",
      [](int32_t n, const at::Tensor& out, const at::Tensor& in, const Splits& outSplits, const Splits& inSplits) {
        withAtbErrors([&] { framework::checkAlltoallSingle(n, out, in, outSplits, inSplits); });
      },
      py::arg("n"), py::arg("out"), py::arg("inp"), py::arg("out_split_sizes"), py::arg("in_split_sizes"));
  m.def(
      "check_all_to_all",
      [](int32_t n, const at::Tensor& x) { withAtbErrors([&] { framework::checkAllToAll(n, x); }); }, py::arg("n"),
      py::arg("x"));
  m.def(
      "check_experts",
      [](int32_t n, const at::Tensor& x, const Counts& local, const Counts& global, bool scatter) {
        withAtbErrors([&] { framework::checkExperts(n, x, local, global, scatter); });
      },
      py::arg("n"), py::arg("x"), py::arg("local_count"), py::arg("global_count"), py::arg("scatter"));
  m.def(
      "check_all_gather", [](const at::Tensor& x) { withAtbErrors([&] { framework::checkAllGather(x); }); },
      py::arg("x"));
  m.def(
      "check_reduction",
      [](const at::Tensor& x, const std::string& op) { withAtbErrors([&] { framework::checkReduction(x, op); }); },
      py::arg("x"), py::arg("op"));
  m.def(
      "check_reduce_scatter",
      [](int32_t n, const at::Tensor& x, const std::string& op) {
        withAtbErrors([&] { framework::checkReduceScatter(n, x, op); });
      },
      py::arg("n"), py::arg("x"), py::arg("op"));
  m.def(
      "check_broadcast",
      [](int32_t n, const at::Tensor& x, int64_t src) { withAtbErrors([&] { framework::checkBroadcast(n, x, src); }); },
      py::arg("n"), py::arg("x"), py::arg("src"));
}

}  // namespace atb_ops
