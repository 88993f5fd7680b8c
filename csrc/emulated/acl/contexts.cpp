// Contexts: a device each. A thread's current context decides its current device; every device has a default
// context (the one aclrtSetDevice makes current) that programs cannot destroy.
#include <acl/acl_rt.h>

#include <memory>
#include <mutex>
#include <unordered_map>

#include "emulated/acl/acl_status.h"
#include "emulated/acl/runtime_state.h"

namespace atb_ops::acl_cpu {

HandleTable<Context>& contexts() {
  static auto* table = new HandleTable<Context>(0xc0000000);  // never destroyed: used until the process ends
  return *table;
}

void* defaultContext(int32_t device) {
  static std::mutex mutex;
  static auto* made = new std::unordered_map<int32_t, void*>();
  std::lock_guard<std::mutex> lock(mutex);
  void*& handle = (*made)[device];
  if (handle == nullptr) handle = contexts().add(std::make_shared<Context>(Context{device, true}));
  return handle;
}

}  // namespace atb_ops::acl_cpu

using atb_ops::acl_cpu::Context;
using atb_ops::acl_cpu::contexts;

extern "C" {

aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  ACL_CPU_CHECK(context != nullptr, ACL_ERROR_INVALID_PARAM, "context is null");
  const aclError rc = atb_ops::acl_cpu::checkDevice(__func__, deviceId);
  if (rc != ACL_SUCCESS) return rc;
  *context = contexts().add(std::make_shared<Context>(Context{deviceId, false}));
  atb_ops::acl_cpu::setCurrent(deviceId, *context);  // ACL makes a new context current
  return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
  const std::shared_ptr<Context> found = contexts().find(context);
  ACL_CPU_CHECK(found != nullptr, ACL_ERROR_INVALID_PARAM, "context ", context,
                " is not a live context (destroyed, or not made by aclrtCreateContext)");
  ACL_CPU_CHECK(!found->isDefault, ACL_ERROR_INVALID_PARAM, "context ", context, " is device ", found->device,
                "'s default context, which aclrtResetDevice releases");
  contexts().remove(context);
  if (atb_ops::acl_cpu::currentContext() == context) atb_ops::acl_cpu::setCurrent(-1, nullptr);
  return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  const std::shared_ptr<Context> found = contexts().find(context);
  ACL_CPU_CHECK(found != nullptr, ACL_ERROR_INVALID_PARAM, "context ", context,
                " is not a live context (destroyed, or not made by aclrtCreateContext)");
  atb_ops::acl_cpu::setCurrent(found->device, context);
  return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  ACL_CPU_CHECK(context != nullptr, ACL_ERROR_INVALID_PARAM, "context is null");
  ACL_CPU_CHECK(atb_ops::acl_cpu::currentContext() != nullptr, ACL_ERROR_RT_CONTEXT_NULL,
                "this thread has no current context (call aclrtSetDevice or aclrtCreateContext first)");
  *context = atb_ops::acl_cpu::currentContext();
  return ACL_SUCCESS;
}

}  // extern "C"
