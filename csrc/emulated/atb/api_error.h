// The boundary of ATB's C++ API: no exception crosses it. Every entry point of libatb.so runs its body through
// guard(), which turns what was thrown into ATB's Status code and logs the message (log.h):
//   - atb_ops' StatusError (the operators' and communicators' checks): the ATB code of the same name; atb_ops' own
//     codes beyond ATB's table (a peer that timed out or died, NCCL, an interrupted wait) become ATB's nearest one
//     and keep their name in the logged message;
//   - ApiError (this layer's own checks, ATB_API_CHECK): its code;
//   - anything else: ERROR_INTERNAL_ERROR (std::bad_alloc: ERROR_OUT_OF_HOST_MEMORY, as ATB).
#pragma once

#include <atb/types.h>
#include <c10/util/StringUtil.h>

#include <exception>
#include <string>

#include "core/status.h"

namespace atb_ops::atb_api {

// ATB's name of a Status ("ERROR_INVALID_PARAM"), "NO_ERROR" for 0, "unknown status <n>" otherwise.
std::string atbStatusName(atb::Status status);

// The ATB code for one of atb_ops' statuses.
atb::Status toAtbStatus(atb_ops::Status status);

// A failure found by this layer; what() starts with ATB's error name.
class ApiError : public std::exception {
 public:
  ApiError(atb::Status status, const std::string& message)
      : status_(status), what_(atbStatusName(status) + ": " + message) {}
  atb::Status status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  atb::Status status_;
  std::string what_;
};

// Logs `where` and the message of the exception being handled, and returns its ATB code. Call only in a catch.
atb::Status statusOfCurrentException(const char* where) noexcept;

template <typename Body>
atb::Status guard(const char* where, Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return statusOfCurrentException(where);
  }
}

}  // namespace atb_ops::atb_api

// Throws ApiError(atb::code, message) unless `cond`; the remaining arguments are the message (name the argument and
// its value).
#define ATB_API_CHECK(cond, code, ...)                                                     \
  do {                                                                                     \
    if (!(cond)) throw ::atb_ops::atb_api::ApiError(::atb::code, ::c10::str(__VA_ARGS__)); \
  } while (0)

// Throws ApiError(atb::code, message).
#define ATB_API_FAIL(code, ...) throw ::atb_ops::atb_api::ApiError(::atb::code, ::c10::str(__VA_ARGS__))
