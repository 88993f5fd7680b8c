// atb_ops._C: loading it registers the TorchScript class and the backends; these helpers serve the
// Python package (validation for the Python API, communicator cache, the gloo group resolver).
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <c10/util/Exception.h>
#include <torch/csrc/utils/pybind.h>

#include "comm/c10d/c10d_communicator.h"
#include "comm/communicator.h"
#include "comm/shm/arena.h"
#include "core/layout.h"
#include "hccl_bindings.h"
#include "nccl_bindings.h"
#include "python_errors.h"
#include "quant/quant.h"

namespace py = pybind11;

namespace {

int64_t validateLayout(std::vector<int64_t> sendCounts, std::vector<int64_t> sdispls, std::vector<int64_t> recvCounts,
                       std::vector<int64_t> rdispls, int64_t rankSize, int64_t sendNumel, int64_t recvCapacity) {
  return atb_ops::withPythonErrors([&] {
    return atb_ops::validateLayout(atb_ops::AllToAllVLayout{sendCounts, sdispls, recvCounts, rdispls}, rankSize,
                                   sendNumel, recvCapacity);
  });
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "atb_ops native core: ATB operations and communicators";

  m.def("backends", &atb_ops::registeredBackends, "Backends built into this atb_ops.");
  m.def("communicator_count", &atb_ops::cachedCommunicatorCount, "Communicators in the cache.");
  m.def(
      "clear_communicators",
      [] {
        py::gil_scoped_release unlocked;
        atb_ops::clearCommunicatorCache();
      },
      "Drops every cached communicator (at exit, and in tests).");

  m.def(
      "shm_empty_bytes",
      [](int64_t nbytes) {
        return atb_ops::withPythonErrors(
            [&] { return atb_ops::shm::emptyShared({nbytes}, at::TensorOptions().dtype(at::kByte)); });
      },
      py::arg("nbytes"), "A uint8 CPU tensor of nbytes in the process's shared-memory arena (see atb_ops.shm_empty).");
  m.def(
      "shm_arena_info",
      [] {
        const atb_ops::shm::Arena& a = atb_ops::shm::Arena::instance();
        return py::dict(py::arg("enabled") = a.enabled(), py::arg("reserved_bytes") = a.bytes(),
                        py::arg("used_bytes") = a.usedBytes());
      },
      "The shared-memory arena: whether it is on, its reserved and its allocated bytes.");
  m.def(
      "shm_is_shared",
      [](const at::Tensor& t) {
        return t.device().is_cpu() && atb_ops::shm::Arena::instance().contains(t.data_ptr(), t.nbytes());
      },
      py::arg("tensor"), "Whether the tensor's memory lies in the shared-memory arena.");
  m.def(
      "_quant_cpu_isa",
      [](const std::string& request) {
        try {
          return atb_ops::quant::cpuIsa(request);
        } catch (const c10::Error& e) {
          throw std::invalid_argument(e.what_without_backtrace());  // ValueError
        }
      },
      py::arg("request") = "",
      "Which atb_ops.quant CPU kernels run: '' (query), 'auto', 'scalar' or 'avx2'; returns the active one.");

  m.def("validate_layout", &validateLayout, py::arg("send_counts"), py::arg("sdispls"), py::arg("recv_counts"),
        py::arg("rdispls"), py::arg("rank_size"), py::arg("send_numel"), py::arg("recv_capacity") = -1,
        "The one layout check (see csrc/core/layout.h); returns sum(recv_counts), raises RuntimeError.");

  m.def(
      "set_group_resolver",
      [](py::object resolver) {
        if (resolver.is_none()) {
          atb_ops::c10dcomm::setGroupResolver(nullptr);
          return;
        }
        // Leaked on purpose: the resolver must outlive the interpreter's teardown order.
        auto* held = new py::object(std::move(resolver));
        atb_ops::c10dcomm::setGroupResolver([held](const atb_ops::CommConfig& c) {
          py::gil_scoped_acquire gil;
          try {
            return (*held)(c.rank, c.rankSize, c.commDomain, c.groupName).cast<std::string>();
          } catch (py::error_already_set& e) {
            TORCH_CHECK(false, "ERROR_COMM_EMPTY: ", e.what());
          }
        });
      },
      "Installs f(rank, rank_size, comm_domain, group_name) -> c10d group name for the gloo backend.");

  atb_ops::bindNccl(m);
  atb_ops::bindHccl(m);
}
