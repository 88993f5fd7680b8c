/* The ACL runtime subset that ATB and HCCL programs call, as atb_ops implements it on CPU (libascendcl.so):
 * devices are numbers (ATB_OPS_NPU_COUNT of them, else the entries of ASCEND_RT_VISIBLE_DEVICES, else 8), the
 * current device is per thread, device memory is aligned host memory that the runtime keeps track of, and work
 * is synchronous, so a stream or event wait has nothing left to wait for. Names, argument lists and values are
 * ACL's (checked against CANN's acl_rt.h by scripts/compile_check_vendor_headers.sh). Valid C and C++. */
#ifndef ATB_OPS_INCLUDE_ACL_ACL_RT_H
#define ATB_OPS_INCLUDE_ACL_ACL_RT_H

#include "acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of aclrtCreateEventWithFlag. */
#define ACL_EVENT_SYNC 0x00000001U
#define ACL_EVENT_CAPTURE_STREAM_PROGRESS 0x00000002U
#define ACL_EVENT_TIME_LINE 0x00000008U

typedef enum aclrtRunMode { ACL_DEVICE, ACL_HOST } aclrtRunMode;

typedef enum aclrtMemcpyKind {
  ACL_MEMCPY_HOST_TO_HOST,
  ACL_MEMCPY_HOST_TO_DEVICE,
  ACL_MEMCPY_DEVICE_TO_HOST,
  ACL_MEMCPY_DEVICE_TO_DEVICE,
  ACL_MEMCPY_DEFAULT,
  ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE,
  ACL_MEMCPY_INNER_DEVICE_TO_DEVICE,
  ACL_MEMCPY_INTER_DEVICE_TO_DEVICE
} aclrtMemcpyKind;

typedef enum aclrtMemMallocPolicy {
  ACL_MEM_MALLOC_HUGE_FIRST,
  ACL_MEM_MALLOC_HUGE_ONLY,
  ACL_MEM_MALLOC_NORMAL_ONLY,
  ACL_MEM_MALLOC_HUGE_FIRST_P2P,
  ACL_MEM_MALLOC_HUGE_ONLY_P2P,
  ACL_MEM_MALLOC_NORMAL_ONLY_P2P,
  ACL_MEM_MALLOC_HUGE1G_ONLY,
  ACL_MEM_MALLOC_HUGE1G_ONLY_P2P,
  ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100,
  ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000,
  ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000
} aclrtMemMallocPolicy;

typedef enum aclrtEventRecordedStatus {
  ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
  ACL_EVENT_RECORDED_STATUS_COMPLETE = 1
} aclrtEventRecordedStatus;

/* --- process --- */
/* configPath: NULL, "" or a readable file (its content is not interpreted). A second aclInit without
 * aclFinalize returns ACL_ERROR_REPEAT_INITIALIZE; aclFinalize without aclInit ACL_ERROR_REPEAT_FINALIZE. */
aclError aclInit(const char* configPath);
aclError aclFinalize(void);
/* The message of this thread's most recent failed call ("" when none). */
const char* aclGetRecentErrMsg(void);

/* --- devices --- */
aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtResetDevice(int32_t deviceId);
aclError aclrtGetDevice(int32_t* deviceId);
aclError aclrtGetDeviceCount(uint32_t* count);
aclError aclrtGetRunMode(aclrtRunMode* runMode);
aclError aclrtSynchronizeDevice(void);

/* --- contexts --- */
aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId);
aclError aclrtDestroyContext(aclrtContext context);
aclError aclrtSetCurrentContext(aclrtContext context);
aclError aclrtGetCurrentContext(aclrtContext* context);

/* --- memory --- */
aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy);
aclError aclrtMallocHost(void** hostPtr, size_t size);
aclError aclrtFree(void* devPtr);
aclError aclrtFreeHost(void* hostPtr);
/* Copies `count` bytes; destMax is the room at dst. Device pointers must lie inside memory from aclrtMalloc. */
aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind);
aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream);
aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count);
aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream);

/* --- streams (NULL is the default stream) --- */
aclError aclrtCreateStream(aclrtStream* stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);

/* --- events --- */
aclError aclrtCreateEvent(aclrtEvent* event);
aclError aclrtCreateEventWithFlag(aclrtEvent* event, uint32_t flag);
aclError aclrtDestroyEvent(aclrtEvent event);
aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus* status);
aclError aclrtSynchronizeEvent(aclrtEvent event);
aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);

#ifdef __cplusplus
}
#endif

#endif /* ATB_OPS_INCLUDE_ACL_ACL_RT_H */
