// Releases the GIL for the scope of a blocking collective when the caller holds it.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <optional>

namespace atb_ops {

// Collectives wait on peers; holding the GIL there would stall every other Python thread of the rank
// (and deadlock ranks that are threads). TorchScript and dispatcher callers may arrive without it.
class GilRelease {
 public:
  GilRelease() {
    if (Py_IsInitialized() && PyGILState_Check()) release_.emplace();
  }

 private:
  std::optional<pybind11::gil_scoped_release> release_;
};

}  // namespace atb_ops
