// How every function of the ACL runtime on CPU reports a failure: it returns ACL's code and keeps a message
// naming the call, the argument and its value for aclGetRecentErrMsg (per thread, as ACL does).
#pragma once

#include <acl/acl_base.h>

#include <sstream>
#include <string>
#include <utility>

namespace atb_ops::acl_cpu {

// Keeps `message` as this thread's most recent error and returns `code`.
aclError fail(aclError code, const std::string& message);

// This thread's most recent error message; "" when none failed yet.
const char* recentError();

template <typename... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

}  // namespace atb_ops::acl_cpu

// Returns `code` from the enclosing ACL function, with a message that starts with the function's name, unless
// `cond` holds. The remaining arguments are streamed into the message (name the argument and its value).
#define ACL_CPU_CHECK(cond, code, ...) \
  if (!(cond)) return ::atb_ops::acl_cpu::fail((code), ::atb_ops::acl_cpu::concat(__func__, ": ", __VA_ARGS__))
