// The headers every unit of the Python modules (atb_ops._C, atb_ops._testing) includes first, as one GCC
// precompiled header (setup.py, TorchPrelude): torch's pybind11 glue alone costs about 7 s of parsing per unit on a
// 2-core machine. Nothing includes this file by name: a unit still includes what it uses.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/csrc/utils/pybind.h>
