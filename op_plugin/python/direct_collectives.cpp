// atb_ops._C.direct_*: atb_ops.distributed's path for calls that need nothing from the dispatcher (no
// autograd, no tracing, no profiler). Each checks everything the Python path checks and, when any check
// fails, raises ValueError *before communicating*: the Python caller then takes its ordinary path, which
// raises the documented AtbError with the documented message. Errors once communication has begun are
// RuntimeErrors, as from the torch ops.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <c10/util/accumulate.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/utils/pybind.h>

#include <optional>
#include <string>
#include <vector>

#include "core/layout.h"
#include "core/status.h"
#include "core/tensor_checks.h"
#include "op_plugin/python/direct_collectives.h"
#include "op_plugin/python/python_errors.h"
#include "op_plugin/torch/collective_ops.h"
#include "op_plugin/torch/comm_handles.h"

namespace py = pybind11;

namespace atb_ops {
namespace {

// Not for the user's eyes: the Python caller catches it and re-checks on its documented path.
[[noreturn]] void notDirect() {
  throw py::value_error("atb_ops: not for the direct path");
}

void need(bool ok) {
  if (!ok) notDirect();
}

int32_t sizeOf(int64_t comm) {
  return withPythonErrors([&] { return communicatorOf(comm)->size(); });
}

void checkCounts(const std::vector<int64_t>& values, int32_t n) {
  need(static_cast<int32_t>(values.size()) == n);
  for (int64_t v : values) need(v >= 0);
}

std::vector<int64_t> packed(const std::vector<int64_t>& counts) {
  std::vector<int64_t> displs(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  return displs;
}

// The layout check, as a precondition of the direct path.
void checkLayout(const AllToAllVLayout& layout, int32_t n, int64_t sendNumel, int64_t recvCapacity) {
  try {
    validateLayout(layout, n, sendNumel, recvCapacity);
  } catch (const c10::Error&) {
    notDirect();
  }
}

at::Tensor allToAllV(const at::Tensor& x, const std::vector<int64_t>& sendCounts, const std::vector<int64_t>& sdispls,
                     const std::vector<int64_t>& recvCounts, const std::vector<int64_t>& rdispls, int64_t comm) {
  const int32_t n = sizeOf(comm);
  need(x.is_contiguous());
  for (const auto* v : {&sendCounts, &sdispls, &recvCounts, &rdispls}) checkCounts(*v, n);
  checkLayout(AllToAllVLayout{sendCounts, sdispls, recvCounts, rdispls}, n, x.numel(), -1);
  return withPythonErrors([&] { return collectives::allToAllV(x, sendCounts, sdispls, recvCounts, rdispls, comm); });
}

// Paddle's alltoall_single with sync_op=True, straight into out (rows of dim 0; None: equal splits).
void alltoallSingle(at::Tensor out, const at::Tensor& in, const std::optional<std::vector<int64_t>>& outSplits,
                    const std::optional<std::vector<int64_t>>& inSplits, int64_t comm) {
  const int32_t n = sizeOf(comm);
  need(in.is_contiguous() && out.is_contiguous());
  need(out.scalar_type() == in.scalar_type() && out.device() == in.device());
  need(!mayOverlap(out, in));  // written while read: the Python path stages through a temporary
  need(in.dim() > 0 && out.dim() > 0 && in.sizes().slice(1) == out.sizes().slice(1));
  const int64_t rowNumel = c10::multiply_integers(in.sizes().slice(1));
  std::vector<int64_t> elems[2];
  const at::Tensor* tensors[2] = {&in, &out};
  const std::optional<std::vector<int64_t>>* splits[2] = {&inSplits, &outSplits};
  for (int k = 0; k < 2; ++k) {
    const int64_t rows = tensors[k]->size(0);
    std::vector<int64_t> r;
    if (splits[k]->has_value()) {
      r = **splits[k];
      checkCounts(r, n);
    } else {
      need(rows % n == 0);
      r.assign(n, rows / n);
    }
    int64_t total = 0;
    for (int64_t v : r) total += v;
    need(total == rows);
    for (int64_t& v : r) v *= rowNumel;
    elems[k] = std::move(r);
  }
  AllToAllVLayout layout{elems[0], packed(elems[0]), elems[1], packed(elems[1])};
  checkLayout(layout, n, in.numel(), out.numel());
  withPythonErrors([&] { collectives::allToAllVInto(in, layout, out, comm); });
  torch::autograd::impl::bump_version(out);  // as an in-place torch op would: autograd sees the write
}

// DeepSpeed's _AllToAll: equal splits of dim 0; returns x's shape.
at::Tensor allToAllEqual(const at::Tensor& x, int64_t comm) {
  const int32_t n = sizeOf(comm);
  need(x.is_contiguous() && x.dim() > 0 && x.size(0) % n == 0);
  const std::vector<int64_t> counts(n, x.numel() / n);
  const std::vector<int64_t> displs = packed(counts);
  return withPythonErrors([&] { return collectives::allToAllV(x, counts, displs, counts, displs, comm); })
      .view(x.sizes());
}

bool knownOp(const std::string& op) {
  return op == "sum" || op == "prod" || op == "max" || op == "min";
}

}  // namespace

void bindDirectCollectives(py::module_& m) {
  m.def("direct_all_to_all_v", &allToAllV, py::arg("x"), py::arg("send_counts"), py::arg("sdispls"),
        py::arg("recv_counts"), py::arg("rdispls"), py::arg("comm"));
  m.def("direct_alltoall_single", &alltoallSingle, py::arg("out"), py::arg("inp"), py::arg("out_split_sizes"),
        py::arg("in_split_sizes"), py::arg("comm"));
  m.def("direct_all_to_all", &allToAllEqual, py::arg("x"), py::arg("comm"));
  m.def(
      "direct_all_gather",
      [](const at::Tensor& x, int64_t comm) {
        need(x.is_contiguous() && x.dim() > 0);
        return withPythonErrors([&] { return collectives::allGather(x, comm); });
      },
      py::arg("x"), py::arg("comm"));
  m.def(
      "direct_all_reduce",
      [](const at::Tensor& x, const std::string& op, int64_t comm) {
        need(x.is_contiguous() && knownOp(op));
        return withPythonErrors([&] { return collectives::allReduce(x, op, comm); });
      },
      py::arg("x"), py::arg("op"), py::arg("comm"));
  m.def(
      "direct_reduce_scatter",
      [](const at::Tensor& x, const std::string& op, int64_t comm) {
        const int32_t n = sizeOf(comm);
        need(x.is_contiguous() && knownOp(op) && x.dim() > 0 && x.size(0) % n == 0);
        return withPythonErrors([&] { return collectives::reduceScatter(x, op, comm); });
      },
      py::arg("x"), py::arg("op"), py::arg("comm"));
  m.def(
      "direct_broadcast",
      [](const at::Tensor& x, int64_t src, int64_t comm) {
        const int32_t n = sizeOf(comm);
        need(x.is_contiguous() && src >= 0 && src < n);
        return withPythonErrors([&] { return collectives::broadcast(x, src, comm); });
      },
      py::arg("x"), py::arg("src"), py::arg("comm"));
}

}  // namespace atb_ops
