// Streams: objects with a device. Work is done when it is issued, so synchronizing a stream only checks it.
// The null stream is the default stream, valid everywhere a stream is.
#include <acl/acl_rt.h>

#include <memory>

#include "emulated/acl/acl_status.h"
#include "emulated/acl/runtime_state.h"

namespace atb_ops::acl_cpu {
namespace {

struct Stream {
  int32_t device = 0;
};

HandleTable<Stream>& streams() {
  static auto* table = new HandleTable<Stream>(0x50000000);  // never destroyed: used until the process ends
  return *table;
}

}  // namespace

aclError checkStream(const char* caller, aclrtStream stream) {
  if (stream == nullptr || streams().find(stream) != nullptr) return ACL_SUCCESS;
  return fail(ACL_ERROR_INVALID_PARAM, concat(caller, ": stream ", stream,
                                              " is not a live stream (destroyed, or not made by aclrtCreateStream)"));
}

}  // namespace atb_ops::acl_cpu

extern "C" {

aclError aclrtCreateStream(aclrtStream* stream) {
  ACL_CPU_CHECK(stream != nullptr, ACL_ERROR_INVALID_PARAM, "stream is null");
  const int32_t device = atb_ops::acl_cpu::currentDevice();
  ACL_CPU_CHECK(device >= 0, ACL_ERROR_RT_CONTEXT_NULL,
                "this thread has no current device (call aclrtSetDevice first)");
  *stream =
      atb_ops::acl_cpu::streams().add(std::make_shared<atb_ops::acl_cpu::Stream>(atb_ops::acl_cpu::Stream{device}));
  return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
  ACL_CPU_CHECK(stream != nullptr, ACL_ERROR_INVALID_PARAM, "stream is null (the default stream is not destroyed)");
  ACL_CPU_CHECK(atb_ops::acl_cpu::streams().remove(stream), ACL_ERROR_INVALID_PARAM, "stream ", stream,
                " is not a live stream (destroyed already, or not made by aclrtCreateStream)");
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  return atb_ops::acl_cpu::checkStream(__func__, stream);
}

}  // extern "C"
