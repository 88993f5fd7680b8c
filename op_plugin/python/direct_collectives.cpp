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

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
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

// A list or tuple of Python ints (not bools, which the documented path refuses) that fit int64.
std::vector<int64_t> intsOf(const py::handle& seq) {
  need(PyList_Check(seq.ptr()) || PyTuple_Check(seq.ptr()));
  const py::sequence items = py::reinterpret_borrow<py::sequence>(seq);
  std::vector<int64_t> values;
  values.reserve(items.size());
  for (const py::handle item : items) {
    need(PyLong_Check(item.ptr()) && !PyBool_Check(item.ptr()));
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(item.ptr(), &overflow);
    need(overflow == 0);
    values.push_back(static_cast<int64_t>(v));
  }
  return values;
}

std::optional<std::vector<int64_t>> optionalIntsOf(const py::handle& seq) {
  if (seq.is_none()) return std::nullopt;
  return intsOf(seq);
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

at::Tensor allToAllV(const at::Tensor& x, const py::handle& sendCountsArg, const py::handle& sdisplsArg,
                     const py::handle& recvCountsArg, const py::handle& rdisplsArg, int64_t comm) {
  const std::vector<int64_t> sendCounts = intsOf(sendCountsArg), sdispls = intsOf(sdisplsArg);
  const std::vector<int64_t> recvCounts = intsOf(recvCountsArg), rdispls = intsOf(rdisplsArg);
  const int32_t n = sizeOf(comm);
  need(x.is_contiguous());
  for (const auto* v : {&sendCounts, &sdispls, &recvCounts, &rdispls}) checkCounts(*v, n);
  checkLayout(AllToAllVLayout{sendCounts, sdispls, recvCounts, rdispls}, n, x.numel(), -1);
  return withPythonErrors([&] { return collectives::allToAllV(x, sendCounts, sdispls, recvCounts, rdispls, comm); });
}

// Paddle's alltoall_single with sync_op=True, straight into out (rows of dim 0; None: equal splits).
void alltoallSingle(at::Tensor out, const at::Tensor& in, const py::handle& outSplitsArg, const py::handle& inSplitsArg,
                    int64_t comm) {
  const std::optional<std::vector<int64_t>> outSplits = optionalIntsOf(outSplitsArg);
  const std::optional<std::vector<int64_t>> inSplits = optionalIntsOf(inSplitsArg);
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

// global_scatter / global_gather's counts: block (r, e) of n_expert * world_size blocks.
struct ExpertLayout {
  int64_t experts;
  std::vector<int64_t> local, global;
};

// The counts, checked as the documented path checks them: x's rows are sum(local) (scatter) or sum(global).
ExpertLayout expertLayout(const at::Tensor& x, const py::handle& localArg, const py::handle& globalArg, int32_t n,
                          bool scatter) {
  ExpertLayout l{0, intsOf(localArg), intsOf(globalArg)};
  need(x.is_contiguous() && x.dim() > 0);
  need(l.local.size() == l.global.size() && !l.local.empty() && l.local.size() % static_cast<size_t>(n) == 0);
  l.experts = static_cast<int64_t>(l.local.size()) / n;
  int64_t localRows = 0, globalRows = 0;
  for (size_t b = 0; b < l.local.size(); ++b) {
    need(l.local[b] >= 0 && l.global[b] >= 0);
    need(!__builtin_add_overflow(localRows, l.local[b], &localRows));
    need(!__builtin_add_overflow(globalRows, l.global[b], &globalRows));
  }
  need(x.size(0) == (scatter ? localRows : globalRows));
  // Element offsets (rows * row size) must fit int64 too; the documented path then names the count.
  const int64_t rowNumel = c10::multiply_integers(x.sizes().slice(1));
  need(rowNumel == 0 || std::max(localRows, globalRows) <= std::numeric_limits<int64_t>::max() / rowNumel);
  return l;
}

std::vector<int64_t> withRows(const at::Tensor& x, int64_t rows) {
  std::vector<int64_t> shape = x.sizes().vec();
  shape[0] = rows;
  return shape;
}

// Row offsets of the blocks (r, e) packed rank-major (r, then e) and expert-major (e, then r).
struct BlockOffsets {
  std::vector<int64_t> rankMajor, expertMajor;
};

BlockOffsets blockOffsets(const std::vector<int64_t>& counts, int32_t n, int64_t experts) {
  BlockOffsets o{std::vector<int64_t>(counts.size()), std::vector<int64_t>(counts.size())};
  int64_t row = 0;
  for (size_t b = 0; b < counts.size(); ++b) o.rankMajor[b] = std::exchange(row, row + counts[b]);
  row = 0;
  for (int64_t e = 0; e < experts; ++e) {
    for (int32_t r = 0; r < n; ++r) {
      const size_t b = static_cast<size_t>(r * experts + e);
      o.expertMajor[b] = std::exchange(row, row + counts[b]);
    }
  }
  return o;
}

// One alltoallv per expert e, every block moving straight to its final place: rank r's rows for expert e
// of rank q (x, rank-major) into q's rows of expert e from r (expert-major); gather is the same reversed.
// Every rank makes the same `experts` calls in the same order.
at::Tensor expertAllToAll(const at::Tensor& x, const ExpertLayout& l, int32_t n, bool scatter, int64_t comm) {
  const int64_t rowNumel = c10::multiply_integers(x.sizes().slice(1));
  const BlockOffsets mine = blockOffsets(l.local, n, l.experts), theirs = blockOffsets(l.global, n, l.experts);
  const int64_t outRows =
      std::accumulate((scatter ? l.global : l.local).begin(), (scatter ? l.global : l.local).end(), int64_t{0});
  std::vector<AllToAllVLayout> layouts;
  for (int64_t e = 0; e < l.experts; ++e) {
    AllToAllVLayout layout{std::vector<int64_t>(n), std::vector<int64_t>(n), std::vector<int64_t>(n),
                           std::vector<int64_t>(n)};
    for (int32_t q = 0; q < n; ++q) {
      const size_t b = static_cast<size_t>(q * l.experts + e);
      // scatter sends local blocks from rank-major x and receives global blocks expert-major; gather the reverse.
      const int64_t sendRows = scatter ? l.local[b] : l.global[b];
      const int64_t sendAt = scatter ? mine.rankMajor[b] : theirs.expertMajor[b];
      const int64_t recvRows = scatter ? l.global[b] : l.local[b];
      const int64_t recvAt = scatter ? theirs.expertMajor[b] : mine.rankMajor[b];
      layout.sendCounts[q] = sendRows * rowNumel;
      layout.sdispls[q] = sendAt * rowNumel;
      layout.recvCounts[q] = recvRows * rowNumel;
      layout.rdispls[q] = recvAt * rowNumel;
    }
    checkLayout(layout, n, x.numel(), outRows * rowNumel);
    layouts.push_back(std::move(layout));
  }
  return withPythonErrors([&] {
    at::Tensor out = communicatorOf(comm)->emptyOutput(withRows(x, outRows), x.options());
    for (const AllToAllVLayout& layout : layouts) collectives::allToAllVInto(x, layout, out, comm);
    return out;
  });
}

at::Tensor globalScatter(const at::Tensor& x, const py::handle& local, const py::handle& global, int64_t comm) {
  const int32_t n = sizeOf(comm);
  return expertAllToAll(x, expertLayout(x, local, global, n, true), n, true, comm);
}

at::Tensor globalGather(const at::Tensor& x, const py::handle& local, const py::handle& global, int64_t comm) {
  const int32_t n = sizeOf(comm);
  return expertAllToAll(x, expertLayout(x, local, global, n, false), n, false, comm);
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
  m.def("direct_global_scatter", &globalScatter, py::arg("x"), py::arg("local_count"), py::arg("global_count"),
        py::arg("comm"));
  m.def("direct_global_gather", &globalGather, py::arg("x"), py::arg("local_count"), py::arg("global_count"),
        py::arg("comm"));
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
