// atb_ops._C.C10dBackend: the torch.distributed backend "atb_ops" as a Python object torch can hold (see the .cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace atb_ops {

void bindC10dBackend(pybind11::module_& m);

}  // namespace atb_ops
