// The boundary of a blocking call from Python: the GIL released while it waits on peers, and Ctrl-C
// (a wait abandoned with ERROR_INTERRUPTED, core/interrupt.h) handed back to Python as KeyboardInterrupt.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <optional>

#include "core/status.h"

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

// Runs f with the GIL released. A wait that Ctrl-C abandoned raises KeyboardInterrupt (with the native message)
// in the caller, as an interrupted Python call would; every other error passes unchanged.
template <typename F>
auto blockingCall(F&& f) -> decltype(f()) {
  try {
    GilRelease unlocked;
    return f();
  } catch (const StatusError& e) {
    if (e.status() != Status::ERROR_INTERRUPTED || !Py_IsInitialized()) throw;
    pybind11::gil_scoped_acquire gil;
    PyErr_SetString(PyExc_KeyboardInterrupt, e.what_without_backtrace());
    throw pybind11::error_already_set();
  }
}

}  // namespace atb_ops
