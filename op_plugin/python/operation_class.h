// atb_ops.Operation: the pybind11 door to OperationBinding (see op_plugin/torch/operation_binding.h).
#pragma once

#include <pybind11/pybind11.h>

namespace atb_ops {

void bindOperationClass(pybind11::module_& m);

}  // namespace atb_ops
