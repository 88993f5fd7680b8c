#include "emulated/acl/acl_status.h"

namespace atb_ops::acl_cpu {
namespace {

thread_local std::string lastMessage;

}  // namespace

aclError fail(aclError code, const std::string& message) {
  lastMessage = message + " (aclError " + std::to_string(code) + ")";
  return code;
}

const char* recentError() {
  return lastMessage.c_str();
}

}  // namespace atb_ops::acl_cpu
