// Python-facing pieces of the NCCL backend: the store hooks of its bootstrap, and the recording mock that
// tests/test_nccl_mock.py drives on CPU.
#pragma once

#include <pybind11/pybind11.h>

namespace atb_ops {

void bindNccl(pybind11::module& m);

}  // namespace atb_ops
