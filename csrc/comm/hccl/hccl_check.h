// The CHECK macros for calls through HcclApi: every failure names the vendor function, its result code
// and the library's own error text, the caller's context, and the file and line that made the call.
#pragma once

#include <cstring>

#include "comm/hccl/hccl_api.h"
#include "core/status.h"

namespace atb_ops::hccl {

// __FILE__ without its directories: messages stay short and do not leak build paths.
constexpr const char* fileBaseName(const char* path) {
  const char* base = path;
  for (const char* p = path; *p != '\0'; ++p) {
    if (*p == '/') base = p + 1;
  }
  return base;
}

// The status a failed HCCL call raises (ATB_HCCL_CHECK).
inline Status failureStatus(HcclApi& api, int32_t rc) {
  if (rc == result::kPara) return Status::ERROR_INVALID_PARAM;
  return api.peerLeft(rc) ? Status::ERROR_COMM_PEER_LEFT : Status::ERROR_HCCL_FAIL;
}

}  // namespace atb_ops::hccl

// Raises ERROR_HCCL_FAIL: "HcclAlltoAllV returned 4 (HCCL_E_INTERNAL: <HcclGetErrorString>) <context> [file:line]",
// or ERROR_INVALID_PARAM for HCCL_E_PARA: HCCL refused the arguments before moving anything (HCCL on CPU also
// returns it when the ranks' calls disagree), so the communicator stays usable; or ERROR_COMM_PEER_LEFT where the
// library says a peer released the communicator (HCCL on CPU), so an operation can move to a fresh one.
// `api` is an HcclApi&, `fn` the HCCL function's name, `call` the expression returning its HcclResult.
#define ATB_HCCL_CHECK(api, fn, call, ...)                                                                             \
  do {                                                                                                                 \
    const int32_t atbHcclRc_ = (call);                                                                                 \
    if (C10_UNLIKELY(atbHcclRc_ != ::atb_ops::hccl::kSuccess)) {                                                       \
      ::atb_ops::detail::raise(::atb_ops::hccl::failureStatus(api, atbHcclRc_), __func__, __FILE__,                    \
                               static_cast<uint32_t>(__LINE__),                                                        \
                               ::c10::str(fn, " returned ", atbHcclRc_, " (", ::atb_ops::hccl::resultName(atbHcclRc_), \
                                          ": ", (api).errorString(atbHcclRc_), ") ", __VA_ARGS__, " [",                \
                                          ::atb_ops::hccl::fileBaseName(__FILE__), ":", __LINE__, "]"));               \
    }                                                                                                                  \
  } while (0)

// The same for ACL runtime calls, raising ERROR_RT_FAIL with aclGetRecentErrMsg's text.
#define ATB_ACL_CHECK(api, fn, call, ...)                                                                            \
  do {                                                                                                               \
    const int32_t atbAclRc_ = (call);                                                                                \
    ATB_CHECK(atbAclRc_ == ::atb_ops::hccl::kSuccess, ERROR_RT_FAIL, fn, " returned aclError ", atbAclRc_, " (",     \
              (api).runtimeErrorString(atbAclRc_), ") ", __VA_ARGS__, " [", ::atb_ops::hccl::fileBaseName(__FILE__), \
              ":", __LINE__, "]");                                                                                   \
  } while (0)
