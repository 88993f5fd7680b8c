// How native errors reach Python from the pybind functions of atb_ops._C.
#pragma once

#include <pybind11/pybind11.h>
#include <torch/csrc/Exceptions.h>

#include <stdexcept>

#include "core/status.h"

namespace atb_ops {

// Runs f; a c10::Error becomes a RuntimeError carrying the ATB-style message without the C++ backtrace, and
// TORCH_WARN reaches Python's warnings module (as in torch's own bindings and TorchScript methods).
template <typename F>
auto withPythonErrors(F&& f) -> decltype(f()) {
  torch::PyWarningHandler warnings;
  try {
    return f();
  } catch (const c10::Error& e) {
    warnings.set_in_exception();
    throw std::runtime_error(e.what_without_backtrace());
  }
}

// Whether a status means bad arguments (raised before any communication, or a disagreement the ranks found
// together): atb_ops.distributed raises those as AtbError, a RuntimeError and a ValueError.
bool isArgumentError(Status s);

// Runs f (with the GIL held by the caller); an argument error becomes atb_ops.errors.AtbError, anything else
// from the native side a RuntimeError, both carrying the ATB-style message.
template <typename F>
auto withAtbErrors(F&& f) -> decltype(f()) {
  torch::PyWarningHandler warnings;
  try {
    return f();
  } catch (const StatusError& e) {
    warnings.set_in_exception();
    if (!isArgumentError(e.status())) throw std::runtime_error(e.what_without_backtrace());
    PyErr_SetString(pybind11::module_::import("atb_ops.errors").attr("AtbError").ptr(), e.what_without_backtrace());
    throw pybind11::error_already_set();
  } catch (const c10::Error& e) {
    warnings.set_in_exception();
    throw std::runtime_error(e.what_without_backtrace());
  }
}

}  // namespace atb_ops
