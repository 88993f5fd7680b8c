// The c10d backend class for Python: a subclass of torch's own torch._C._distributed_c10d.Backend (bound by torch
// with an intrusive_ptr holder), so the object atb_ops.c10d_backend's creator returns is one torch's
// ProcessGroup accepts as its CPU backend. torch's module must be loaded first (import torch.distributed does it).
#include "op_plugin/python/c10d_binding.h"

#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "op_plugin/torch/c10d_backend.h"

namespace py = pybind11;

namespace atb_ops {

void bindC10dBackend(py::module_& m) {
  // The base class must be registered before ours refers to it.
  py::module_::import("torch._C._distributed_c10d");
  py::class_<C10dBackend, c10d::Backend, c10::intrusive_ptr<C10dBackend>>(
      m, "C10dBackend", "The torch.distributed backend 'atb_ops' of one process group (atb_ops.c10d_backend).")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout, const std::string& groupName) {
             // The constructor waits for the group's peers: it releases the GIL itself (gil_release.h).
             return c10::make_intrusive<C10dBackend>(store, rank, size, timeout, groupName);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("group_name"))
      .def_property_readonly("comm_backend", &C10dBackend::commBackend,
                             "The atb_ops backend that moves the data ('shm').")
      .def_property_readonly("comm_domain", &C10dBackend::commDomain,
                             "The communicator's commDomain (atb_ops._C.communicator_stats takes it).");
}

}  // namespace atb_ops
