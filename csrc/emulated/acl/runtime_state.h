// What the ACL runtime on CPU knows about devices and contexts: how many devices there are, and each thread's
// current device and context (as in ACL, both are per thread).
#pragma once

#include <acl/acl_base.h>

#include <cstdint>
#include <string>

#include "emulated/acl/handle_table.h"

namespace atb_ops::acl_cpu {

// The number of emulated devices: ATB_OPS_NPU_COUNT, else the entries of ASCEND_RT_VISIBLE_DEVICES, else 8 (the
// Python emulation's rule). Read once per process. Returns ACL_SUCCESS, or ACL_ERROR_INVALID_PARAM with a
// message naming the variable and its value.
aclError deviceCount(uint32_t* count);

// ACL_SUCCESS when `device` is a valid device id, else ACL_ERROR_RT_INVALID_DEVICEID with `caller` and the id.
aclError checkDevice(const char* caller, int32_t device);

struct Context {
  int32_t device = 0;
  bool isDefault = false;  // the device's own context (aclrtSetDevice's): never destroyed by a program
};

HandleTable<Context>& contexts();

// The default context of `device` (made on first use).
void* defaultContext(int32_t device);

// This thread's current device (-1 when none was set) and context (null when none).
int32_t currentDevice();
void* currentContext();
void setCurrent(int32_t device, void* context);

}  // namespace atb_ops::acl_cpu
