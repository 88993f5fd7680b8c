#include "op_plugin/python/operation_class.h"

#include <pybind11/stl.h>

#include <torch/csrc/utils/pybind.h>

#include <string>
#include <vector>

#include "op_plugin/python/python_errors.h"
#include "op_plugin/torch/operation_binding.h"

namespace py = pybind11;

namespace atb_ops {
namespace {

using Tensors = std::vector<at::Tensor>;

// A method of OperationBinding whose native errors reach Python as RuntimeError (ATB's error name first).
template <typename R, typename... Args>
auto raising(R (OperationBinding::*method)(Args...)) {
  return [method](OperationBinding& self, Args... args) -> R {
    return withPythonErrors([&]() -> R { return (self.*method)(std::forward<Args>(args)...); });
  };
}
template <typename R, typename... Args>
auto raising(R (OperationBinding::*method)(Args...) const) {
  return [method](const OperationBinding& self, Args... args) -> R {
    return withPythonErrors([&]() -> R { return (self.*method)(std::forward<Args>(args)...); });
  };
}

}  // namespace

void bindOperationClass(py::module_& m) {
  py::class_<OperationBinding>(m, "Operation",
                               "ATB's OperationTorch (torch.classes.OperationTorch.OperationTorch), the same methods "
                               "and the same operator objects, through pybind11: no TorchScript dispatch per call.")
      .def(py::init([](const std::string& name) {
             return withPythonErrors([&] { return std::make_unique<OperationBinding>(name); });
           }),
           py::arg("name"), "Creates the operator `name` (e.g. \"AllToAllVV2Operation\"); unknown names raise.")
      .def("set_param", raising(&OperationBinding::setParam), py::arg("param"),
           "Sets the param (ATB's JSON); returns '{\"result\": 0}'.")
      .def("update_param", raising(&OperationBinding::setParam), py::arg("param"), "Same as set_param.")
      .def("set_varaintpack_param", raising(&OperationBinding::setVariantPackParam), py::arg("param"),
           "The V operators' counts (ATB's spelling).")
      .def("set_variantpack_param", raising(&OperationBinding::setVariantPackParam), py::arg("param"),
           "Same as set_varaintpack_param.")
      .def("infer_shape", raising(&OperationBinding::inferShape), py::arg("inputs"),
           "JSON: result, num, dtype (aclDataType), format, shape.")
      .def("setup", raising(&OperationBinding::setup), py::arg("inputs"), py::arg("outputs"),
           "Checks the inputs; JSON: result, workspace_size, setup_time.")
      .def("execute", raising(&OperationBinding::execute), py::arg("inputs"), "Runs; returns new outputs.")
      .def("execute_out", raising(&OperationBinding::executeOut), py::arg("inputs"), py::arg("outputs"),
           "Runs into the caller's outputs.")
      .def("execute_sync", raising(&OperationBinding::executeSync), py::arg("inputs"), py::arg("outputs"),
           py::arg("workspace_size"), "execute_out, timed; JSON: result, execute_time, sync_time.")
      .def(
          "set_tensor_list", [](OperationBinding&, const Tensors&, const std::string&) {}, py::arg("tensors"),
          py::arg("name"), "Accepted and ignored: no communication operator takes a tensor list.")
      .def("execute_split_thread", raising(&OperationBinding::execute), py::arg("inputs"), "Same as execute.")
      .def("name", &OperationBinding::name, "The operator's name.");
}

}  // namespace atb_ops
