// Python side of the HCCL backend: the torch.distributed store hook for root-info exchange, and the
// atb_ops._C._hccl_mock_* functions that tests/test_hccl_mock.py drives.
#pragma once

#include <pybind11/pybind11.h>

namespace atb_ops {

void bindHccl(pybind11::module_& m);

}  // namespace atb_ops
