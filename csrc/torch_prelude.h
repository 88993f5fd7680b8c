// The torch headers most of the library's units include, forced first into every C++ unit of the libraries that
// use torch, as a GCC precompiled header (setup.py, TorchPrelude): parsing them costs about 3-4 s per unit on a
// 2-core machine, and about 70 units include them; loading the precompiled form costs about 1 s. Nothing includes
// this file by name: a unit still includes what it uses.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
