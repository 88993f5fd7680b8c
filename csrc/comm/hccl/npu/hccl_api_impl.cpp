// The real HcclApi: HCCL and ACL through the headers torch_npu ships (the same declarations torch_npu's
// own ProcessGroupHCCL compiles against), devices and streams through torch_npu. Built only with the Ascend
// toolkit; scripts/compile_check_hccl.sh compiles it against the torch_npu wheel's headers in CI.
#include "comm/hccl/npu/real_hccl_api.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>

#include <acl/acl.h>

#include "third_party/hccl/inc/hccl/hccl.h"
#include "third_party/hccl/inc/hccl/hccl_types.h"
#include "torch_npu/csrc/core/npu/NPUFunctions.h"
#include "torch_npu/csrc/core/npu/NPUStream.h"

#include "core/status.h"

namespace atb_ops::hccl {

namespace {

// Entry points that older CANN releases lack are looked up at first use rather than linked, so that loading
// atb_ops never fails on them; decltype keeps their signatures checked against hccl.h.
template <typename Fn>
Fn lookup(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_DEFAULT, name));
}

template <typename Fn>
Fn required(Fn fn, const char* name, const char* why) {
  ATB_CHECK(fn != nullptr, ERROR_HCCL_FAIL, name, " is not exported by the loaded libhccl (", why,
            "); this CANN release is too old for it");
  return fn;
}

}  // namespace
}  // namespace atb_ops::hccl

#define ATB_HCCL_MAYBE_ENTRY(fn)                                                \
  ([] {                                                                         \
    static const auto resolved = ::atb_ops::hccl::lookup<decltype(&::fn)>(#fn); \
    return resolved;                                                            \
  }())
#define ATB_HCCL_ENTRY(fn, why) ::atb_ops::hccl::required(ATB_HCCL_MAYBE_ENTRY(fn), #fn, why)

#include "comm/hccl/hccl_entry_points.h"

namespace atb_ops::hccl {

static_assert(std::is_same_v<aclrtStream, StreamHandle>, "aclrtStream is not a void*");
static_assert(std::is_same_v<aclrtEvent, EventHandle>, "aclrtEvent is not a void*");
static_assert(kSuccess == ACL_SUCCESS, "ACL_SUCCESS moved");

namespace {

class RealHcclApi final : public HcclEntryPoints {
 public:
  std::string errorString(int32_t hcclResult) override {
    const auto describe = ATB_HCCL_MAYBE_ENTRY(HcclGetErrorString);
    const char* text = describe == nullptr ? nullptr : describe(static_cast<HcclResult>(hcclResult));
    return text == nullptr ? resultName(hcclResult) : std::string(text);
  }

  // Through torch_npu, whose per-thread device cache must agree with ACL's.
  int32_t getDevice(int32_t* device) override { return c10_npu::GetDevice(device); }

  int32_t setDevice(int32_t device) override { return c10_npu::SetDevice(static_cast<c10::DeviceIndex>(device)); }

  StreamHandle currentStream(int32_t device) override {
    // stream() drains torch_npu's task queue first, so HCCL is ordered after the ATen work queued before it.
    return c10_npu::getCurrentNPUStream(static_cast<c10::DeviceIndex>(device)).stream();
  }

  int32_t createEvent(EventHandle* event) override { return aclrtCreateEvent(event); }

  int32_t recordEvent(EventHandle event, StreamHandle stream) override { return aclrtRecordEvent(event, stream); }

  int32_t queryEvent(EventHandle event, bool* complete) override {
    aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    const aclError rc = aclrtQueryEventStatus(event, &status);
    *complete = status == ACL_EVENT_RECORDED_STATUS_COMPLETE;
    return rc;
  }

  int32_t destroyEvent(EventHandle event) override { return aclrtDestroyEvent(event); }

  std::string runtimeErrorString(int32_t aclError) override {
    const char* text = aclGetRecentErrMsg();
    return text == nullptr || *text == '\0' ? "aclError " + std::to_string(aclError) : std::string(text);
  }
};

}  // namespace

std::shared_ptr<HcclApi> realHcclApi() {
  static std::shared_ptr<HcclApi> api = std::make_shared<RealHcclApi>();
  return api;
}

}  // namespace atb_ops::hccl
