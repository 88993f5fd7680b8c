// Devices: numbers 0..count-1, a current one per thread. Setting a device also makes its default context
// current, as ACL does; resetting the current device leaves the thread with none.
#include <acl/acl_rt.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "emulated/acl/acl_status.h"
#include "emulated/acl/runtime_state.h"

namespace atb_ops::acl_cpu {
namespace {

constexpr uint32_t kDefaultDeviceCount = 8;  // one Atlas 800 box, as the Python emulation reports

struct DeviceCount {
  uint32_t count = kDefaultDeviceCount;
  std::string error;  // non-empty: the environment is invalid
};

DeviceCount readDeviceCount() {
  DeviceCount result;
  const char* raw = std::getenv("ATB_OPS_NPU_COUNT");
  if (raw != nullptr && *raw != '\0') {
    char* end = nullptr;
    const long value = std::strtol(raw, &end, 10);
    if (*end != '\0' || value <= 0 || value > 65536) {
      result.error = concat("ATB_OPS_NPU_COUNT='", raw, "': expected a positive integer");
    } else {
      result.count = static_cast<uint32_t>(value);
    }
    return result;
  }
  const char* visible = std::getenv("ASCEND_RT_VISIBLE_DEVICES");
  if (visible != nullptr) {
    uint32_t entries = 0;
    std::string item;
    for (const char* p = visible;; ++p) {
      if (*p == ',' || *p == '\0') {
        if (item.find_first_not_of(" \t") != std::string::npos) ++entries;
        item.clear();
        if (*p == '\0') break;
      } else {
        item += *p;
      }
    }
    if (entries > 0) result.count = entries;
  }
  return result;
}

thread_local int32_t threadDevice = -1;
thread_local void* threadContext = nullptr;

}  // namespace

aclError deviceCount(uint32_t* count) {
  static const DeviceCount known = readDeviceCount();
  if (!known.error.empty()) return fail(ACL_ERROR_INVALID_PARAM, known.error);
  *count = known.count;
  return ACL_SUCCESS;
}

aclError checkDevice(const char* caller, int32_t device) {
  uint32_t count = 0;
  const aclError rc = deviceCount(&count);
  if (rc != ACL_SUCCESS) return rc;
  if (device < 0 || static_cast<uint32_t>(device) >= count) {
    return fail(ACL_ERROR_RT_INVALID_DEVICEID,
                concat(caller, ": deviceId ", device, " is not a device (this runtime has ", count, " devices: 0..",
                       count - 1, "; ATB_OPS_NPU_COUNT changes it)"));
  }
  return ACL_SUCCESS;
}

int32_t currentDevice() {
  return threadDevice;
}

void* currentContext() {
  return threadContext;
}

void setCurrent(int32_t device, void* context) {
  threadDevice = device;
  threadContext = context;
}

}  // namespace atb_ops::acl_cpu

using atb_ops::acl_cpu::checkDevice;
using atb_ops::acl_cpu::currentDevice;
using atb_ops::acl_cpu::defaultContext;
using atb_ops::acl_cpu::deviceCount;
using atb_ops::acl_cpu::setCurrent;

extern "C" {

aclError aclrtGetDeviceCount(uint32_t* count) {
  ACL_CPU_CHECK(count != nullptr, ACL_ERROR_INVALID_PARAM, "count is null");
  return deviceCount(count);
}

aclError aclrtSetDevice(int32_t deviceId) {
  const aclError rc = checkDevice(__func__, deviceId);
  if (rc != ACL_SUCCESS) return rc;
  setCurrent(deviceId, defaultContext(deviceId));
  return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
  const aclError rc = checkDevice(__func__, deviceId);
  if (rc != ACL_SUCCESS) return rc;
  if (currentDevice() == deviceId) setCurrent(-1, nullptr);
  return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t* deviceId) {
  ACL_CPU_CHECK(deviceId != nullptr, ACL_ERROR_INVALID_PARAM, "deviceId is null");
  ACL_CPU_CHECK(currentDevice() >= 0, ACL_ERROR_RT_CONTEXT_NULL,
                "this thread has no current device (call aclrtSetDevice first)");
  *deviceId = currentDevice();
  return ACL_SUCCESS;
}

aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  ACL_CPU_CHECK(runMode != nullptr, ACL_ERROR_INVALID_PARAM, "runMode is null");
  *runMode = ACL_HOST;  // the program runs on the host, beside its (emulated) devices
  return ACL_SUCCESS;
}

// Work completes when it is issued: nothing is ever pending on a device.
aclError aclrtSynchronizeDevice(void) {
  ACL_CPU_CHECK(currentDevice() >= 0, ACL_ERROR_RT_CONTEXT_NULL,
                "this thread has no current device (call aclrtSetDevice first)");
  return ACL_SUCCESS;
}

}  // extern "C"
