// Backend "hccl" for CPU tensors: the HCCL backend's own logic (csrc/comm/hccl/hccl_communicator.cpp) over HCCL's
// C API as atb_ops implements it on CPU ranks (csrc/emulated/hccl/: $ASCEND_HOME_PATH/lib64/libhccl.so), the
// counterpart of csrc/comm/hccl/npu/hccl_api_impl.cpp: the HCCL calls are the same (comm/hccl/hccl_entry_points.h),
// this file adds the runtime half. It is part of the emulation's $ATB_HOME_PATH/lib/libatb.so,
// which links libhccl.so as ATB's libatb.so does, and registers the backend when it loads (python -m atb_ops run
// loads it). The NPU runtime has no CPU counterpart: the device calls succeed without
// effect, there are no streams (every call has completed when it returns), and an event is complete as soon as it is
// recorded.
#include <string>

#include <hccl/hccl.h>

namespace atb_ops::hccl {
// Every entry point is in atb_ops' own libhccl.so, which libatb.so links. (Through a function, so that the shared
// body's "is it there?" test is not a comparison of a function's address with null.)
namespace {
template <typename Fn>
Fn linked(Fn fn) {
  return fn;
}
}  // namespace
}  // namespace atb_ops::hccl

#define ATB_HCCL_ENTRY(fn, why) (&::fn)
#define ATB_HCCL_MAYBE_ENTRY(fn) ::atb_ops::hccl::linked(&::fn)

#include "comm/backend_registry.h"
#include "comm/hccl/hccl_communicator.h"
#include "comm/hccl/hccl_entry_points.h"

extern "C" const char* atbOpsHcclCpuLastError();
extern "C" int32_t atbOpsHcclCpuLastStatus();

namespace atb_ops::hccl {
namespace {

thread_local int32_t currentDevice = 0;

class CpuHcclApi final : public HcclEntryPoints {
 public:
  bool peerLeft(int32_t hcclResult) override {
    return hcclResult != HCCL_SUCCESS &&
           atbOpsHcclCpuLastStatus() == static_cast<int32_t>(Status::ERROR_COMM_PEER_LEFT);
  }
  std::string errorString(int32_t hcclResult) override {
    const std::string detail = atbOpsHcclCpuLastError();
    return std::string(HcclGetErrorString(static_cast<HcclResult>(hcclResult))) +
           (detail.empty() ? "" : " - " + detail);
  }

  int32_t getDevice(int32_t* device) override {
    *device = currentDevice;
    return kSuccess;
  }
  int32_t setDevice(int32_t device) override {
    currentDevice = device;
    return kSuccess;
  }
  StreamHandle currentStream(int32_t) override { return nullptr; }
  int32_t createEvent(EventHandle* event) override {
    static char token;
    *event = &token;
    return kSuccess;
  }
  int32_t recordEvent(EventHandle, StreamHandle) override { return kSuccess; }
  int32_t queryEvent(EventHandle, bool* complete) override {
    *complete = true;
    return kSuccess;
  }
  int32_t destroyEvent(EventHandle) override { return kSuccess; }
  std::string runtimeErrorString(int32_t aclError) override {
    return "aclError " + std::to_string(aclError) + " (no NPU runtime on CPU)";
  }
};

const bool registered = [] {
  static const std::shared_ptr<HcclApi> api = std::make_shared<CpuHcclApi>();
  registerBackend("hccl", c10::DeviceType::CPU,
                  [](const CommConfig& c) -> std::shared_ptr<Communicator> { return makeHcclCommunicator(c, api); });
  return true;
}();

}  // namespace
}  // namespace atb_ops::hccl
