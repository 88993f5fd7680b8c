// atb_ops._C.direct_*: the collectives without the dispatcher, for atb_ops.distributed (see the .cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace atb_ops {

void bindDirectCollectives(pybind11::module_& m);

}  // namespace atb_ops
