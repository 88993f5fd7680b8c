// aclInit / aclFinalize, the recent error message, the chip's name and element sizes.
#include <acl/acl_rt.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>

#include "emulated/acl/acl_status.h"

namespace atb_ops::acl_cpu {
namespace {

enum class Lifecycle { kNever, kInitialized, kFinalized };

std::mutex lifecycleMutex;
Lifecycle lifecycle = Lifecycle::kNever;

}  // namespace
}  // namespace atb_ops::acl_cpu

using atb_ops::acl_cpu::Lifecycle;

extern "C" {

aclError aclInit(const char* configPath) {
  // The file (ACL's JSON options: dump, profiling) is only checked to exist: none of its options apply on CPU.
  if (configPath != nullptr && *configPath != '\0') {
    ACL_CPU_CHECK(std::ifstream(configPath).good(), ACL_ERROR_INVALID_FILE, "configPath '", configPath,
                  "' cannot be read");
  }
  std::lock_guard<std::mutex> lock(atb_ops::acl_cpu::lifecycleMutex);
  ACL_CPU_CHECK(atb_ops::acl_cpu::lifecycle != Lifecycle::kInitialized, ACL_ERROR_REPEAT_INITIALIZE,
                "called twice without aclFinalize");
  atb_ops::acl_cpu::lifecycle = Lifecycle::kInitialized;
  return ACL_SUCCESS;
}

aclError aclFinalize(void) {
  std::lock_guard<std::mutex> lock(atb_ops::acl_cpu::lifecycleMutex);
  ACL_CPU_CHECK(atb_ops::acl_cpu::lifecycle != Lifecycle::kFinalized, ACL_ERROR_REPEAT_FINALIZE, "called twice");
  ACL_CPU_CHECK(atb_ops::acl_cpu::lifecycle == Lifecycle::kInitialized, ACL_ERROR_UNINITIALIZE,
                "aclInit was not called");
  atb_ops::acl_cpu::lifecycle = Lifecycle::kFinalized;
  return ACL_SUCCESS;
}

const char* aclGetRecentErrMsg(void) {
  return atb_ops::acl_cpu::recentError();
}

const char* aclrtGetSocName(void) {
  // The Python emulation's name (ATB's SoC checks look for "Ascend910B"); ATB_OPS_NPU_NAME overrides both.
  static const std::string name = [] {
    const char* set = std::getenv("ATB_OPS_NPU_NAME");
    return std::string(set != nullptr && *set != '\0' ? set : "Ascend910B (atb_ops emulation on cpu)");
  }();
  return name.c_str();
}

size_t aclDataTypeSize(aclDataType dataType) {
  switch (dataType) {
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_BOOL:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0: return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16: return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_COMPLEX32: return 4;
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0;  // undefined, strings, and types narrower than a byte (INT4, UINT1, FLOAT6/4)
  }
}

}  // extern "C"
