// How native errors reach Python from the pybind helpers of atb_ops._C.
#pragma once

#include <c10/util/Exception.h>

#include <stdexcept>

namespace atb_ops {

// Runs f; a c10::Error becomes a RuntimeError carrying the ATB-style message without the C++ backtrace.
template <typename F>
auto withPythonErrors(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw std::runtime_error(e.what_without_backtrace());
  }
}

}  // namespace atb_ops
