// The ACL runtime on CPU (libascendcl.so) from plain C++, built against the installed acl/acl.h as an ATB
// program is (-I$ASCEND_HOME_PATH/include -L$ASCEND_HOME_PATH/lib64 -lascendcl): devices, memory and every
// copy kind with the bytes checked, streams, events, contexts, and the error code and message of each bad
// argument (null pointers, sizes, unknown and freed pointers and handles). Run with ATB_OPS_NPU_COUNT=4.
// Exit 0 and "acl runtime: N checks passed" when every check holds.
#include <acl/acl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int checks = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s (recent ACL message: %s)\n", what.c_str(), aclGetRecentErrMsg());
    std::exit(1);
  }
  ++checks;
}

// `call` returned `want`; for a failure, the recent message names the function and contains `words`.
void expectCode(aclError got, aclError want, const char* call, const char* function = nullptr,
                const char* words = nullptr) {
  expect(got == want, std::string(call) + " returned " + std::to_string(got) + ", expected " + std::to_string(want));
  if (function != nullptr) {
    const std::string message = aclGetRecentErrMsg();
    expect(message.rfind(function, 0) == 0 && message.find(words) != std::string::npos,
           std::string(call) + ": message '" + message + "' lacks '" + function + "' or '" + words + "'");
  }
}

void devices() {
  uint32_t count = 0;
  expectCode(aclrtGetDeviceCount(&count), ACL_SUCCESS, "aclrtGetDeviceCount");
  expect(count == 4, "ATB_OPS_NPU_COUNT=4 gives " + std::to_string(count) + " devices");
  expectCode(aclrtGetDeviceCount(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount(null)", "aclrtGetDeviceCount",
             "count is null");
  int32_t device = -1;
  expectCode(aclrtGetDevice(&device), ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice before aclrtSetDevice",
             "aclrtGetDevice", "aclrtSetDevice");
  expectCode(aclrtSetDevice(4), ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice(4)", "aclrtSetDevice", "deviceId 4");
  expectCode(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice(-1)");
  expectCode(aclrtSetDevice(2), ACL_SUCCESS, "aclrtSetDevice(2)");
  expectCode(aclrtGetDevice(&device), ACL_SUCCESS, "aclrtGetDevice");
  expect(device == 2, "current device " + std::to_string(device));
  // The current device is per thread.
  std::thread([] {
    int32_t other = -1;
    expectCode(aclrtGetDevice(&other), ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice on a new thread");
    expectCode(aclrtSetDevice(1), ACL_SUCCESS, "aclrtSetDevice(1) on a new thread");
    expectCode(aclrtGetDevice(&other), ACL_SUCCESS, "aclrtGetDevice on a new thread");
    expect(other == 1, "the new thread's device " + std::to_string(other));
  }).join();
  expectCode(aclrtGetDevice(&device), ACL_SUCCESS, "aclrtGetDevice after the thread");
  expect(device == 2, "this thread's device is still 2, got " + std::to_string(device));
}

void memory() {
  constexpr size_t kBytes = 1000;
  void* dev = nullptr;
  void* dev2 = nullptr;
  void* host = nullptr;
  expectCode(aclrtMalloc(&dev, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  expectCode(aclrtMalloc(&dev2, kBytes, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS, "aclrtMalloc");
  expectCode(aclrtMallocHost(&host, kBytes), ACL_SUCCESS, "aclrtMallocHost");
  expect(reinterpret_cast<uintptr_t>(dev) % 32 == 0, "device memory is 32-byte aligned");
  expectCode(aclrtMalloc(nullptr, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM, "aclrtMalloc(null)");
  void* none = nullptr;
  expectCode(aclrtMalloc(&none, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM, "aclrtMalloc(size 0)",
             "aclrtMalloc", "size is 0");
  expectCode(aclrtMalloc(&none, 8, static_cast<aclrtMemMallocPolicy>(77)), ACL_ERROR_INVALID_PARAM,
             "aclrtMalloc(policy 77)", "aclrtMalloc", "policy 77");

  // Host -> device -> device -> host, every byte checked.
  std::vector<unsigned char> in(kBytes), out(kBytes, 0);
  for (size_t i = 0; i < kBytes; ++i) in[i] = static_cast<unsigned char>(i * 7 + 3);
  expectCode(aclrtMemcpy(dev, kBytes, in.data(), kBytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS, "H2D");
  expectCode(aclrtMemcpy(dev2, kBytes, dev, kBytes, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS, "D2D");
  expectCode(aclrtMemcpy(host, kBytes, dev2, kBytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS, "D2H");
  expectCode(aclrtMemcpy(out.data(), kBytes, host, kBytes, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS, "H2H");
  expect(out == in, "the bytes came back through H2D, D2D, D2H, H2H");
  expectCode(aclrtMemcpy(out.data(), kBytes, dev, kBytes, ACL_MEMCPY_DEFAULT), ACL_SUCCESS, "DEFAULT");
  expect(out == in, "ACL_MEMCPY_DEFAULT copies device memory to host");
  // A copy into the middle of a block that ends at its end is inside it.
  expectCode(aclrtMemcpy(static_cast<char*>(dev) + 900, 100, in.data(), 100, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS,
             "H2D at the block's tail");

  // Bad copies: sizes, nulls, kinds, and pointers on the wrong side.
  expectCode(aclrtMemcpy(dev, 10, in.data(), 11, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM, "count > destMax",
             "aclrtMemcpy", "count 11 exceeds destMax 10");
  expectCode(aclrtMemcpy(nullptr, 10, in.data(), 10, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM, "null dst",
             "aclrtMemcpy", "dst is null");
  expectCode(aclrtMemcpy(dev, 10, nullptr, 10, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM, "null src",
             "aclrtMemcpy", "src is null");
  expectCode(aclrtMemcpy(dev, 10, in.data(), 10, static_cast<aclrtMemcpyKind>(42)), ACL_ERROR_INVALID_PARAM, "kind 42",
             "aclrtMemcpy", "kind 42");
  expectCode(aclrtMemcpy(out.data(), kBytes, in.data(), kBytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
             "H2D into host memory", "aclrtMemcpy", "not inside device memory");
  expectCode(aclrtMemcpy(dev, kBytes + 1, in.data(), kBytes + 1, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
             "H2D past the block's end", "aclrtMemcpy", "not inside device memory");
  expectCode(aclrtMemcpy(dev2, kBytes, dev, kBytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
             "H2D from device memory", "aclrtMemcpy", "the copy kind says host");
  expectCode(aclrtMemcpy(dev, 0, nullptr, 0, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS, "a copy of 0 bytes");

  // Memset, then the bytes.
  expectCode(aclrtMemset(dev, kBytes, 0x5a, kBytes), ACL_SUCCESS, "aclrtMemset");
  expectCode(aclrtMemcpy(out.data(), kBytes, dev, kBytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS, "D2H");
  expect(out == std::vector<unsigned char>(kBytes, 0x5a), "aclrtMemset wrote 0x5a everywhere");
  expectCode(aclrtMemset(dev, 10, 0, 11), ACL_ERROR_INVALID_PARAM, "memset count > maxCount", "aclrtMemset",
             "count 11 exceeds maxCount 10");
  expectCode(aclrtMemset(out.data(), kBytes, 0, kBytes), ACL_ERROR_INVALID_PARAM, "memset of plain host memory",
             "aclrtMemset", "not inside memory from aclrtMalloc");

  // Frees: unknown, inside a block, of the wrong kind, twice, null.
  expectCode(aclrtFree(out.data()), ACL_ERROR_INVALID_PARAM, "aclrtFree(unknown)", "aclrtFree",
             "is not memory from aclrtMalloc");
  expectCode(aclrtFree(static_cast<char*>(dev) + 8), ACL_ERROR_INVALID_PARAM, "aclrtFree(inside a block)", "aclrtFree",
             "points inside the 1000-byte block");
  expectCode(aclrtFree(host), ACL_ERROR_INVALID_PARAM, "aclrtFree(host memory)", "aclrtFree", "aclrtFreeHost");
  expectCode(aclrtFreeHost(dev), ACL_ERROR_INVALID_PARAM, "aclrtFreeHost(device memory)", "aclrtFreeHost",
             "free it with aclrtFree");
  expectCode(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtFree(null)");
  expectCode(aclrtFree(dev), ACL_SUCCESS, "aclrtFree");
  expectCode(aclrtFree(dev), ACL_ERROR_INVALID_PARAM, "a second aclrtFree", "aclrtFree", "freed already");
  expectCode(aclrtMemcpy(out.data(), 10, dev, 10, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM,
             "a copy from freed memory", "aclrtMemcpy", "not inside device memory");
  expectCode(aclrtFree(dev2), ACL_SUCCESS, "aclrtFree");
  expectCode(aclrtFreeHost(host), ACL_SUCCESS, "aclrtFreeHost");
}

void streamsAndEvents() {
  aclrtStream stream = nullptr;
  aclrtEvent event = nullptr;
  expectCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  expectCode(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtCreateStream(null)");
  expectCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  expectCode(aclrtSynchronizeStream(nullptr), ACL_SUCCESS, "aclrtSynchronizeStream(default stream)");
  expectCode(aclrtCreateEvent(&event), ACL_SUCCESS, "aclrtCreateEvent");
  aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_COMPLETE;
  expectCode(aclrtQueryEventStatus(event, &status), ACL_SUCCESS, "aclrtQueryEventStatus");
  expect(status == ACL_EVENT_RECORDED_STATUS_NOT_READY, "an event not yet recorded is not ready");
  expectCode(aclrtRecordEvent(event, stream), ACL_SUCCESS, "aclrtRecordEvent");
  expectCode(aclrtQueryEventStatus(event, &status), ACL_SUCCESS, "aclrtQueryEventStatus");
  expect(status == ACL_EVENT_RECORDED_STATUS_COMPLETE, "a recorded event is complete");
  expectCode(aclrtStreamWaitEvent(stream, event), ACL_SUCCESS, "aclrtStreamWaitEvent");
  expectCode(aclrtSynchronizeEvent(event), ACL_SUCCESS, "aclrtSynchronizeEvent");
  // A stream passed where an event goes, and an event where a stream goes, are recognised.
  expectCode(aclrtSynchronizeEvent(stream), ACL_ERROR_INVALID_PARAM, "a stream as an event", "aclrtSynchronizeEvent",
             "is not a live event");
  expectCode(aclrtSynchronizeStream(event), ACL_ERROR_INVALID_PARAM, "an event as a stream", "aclrtSynchronizeStream",
             "is not a live stream");
  expectCode(aclrtCreateEventWithFlag(&event, 0x80), ACL_ERROR_INVALID_PARAM, "an unknown event flag");
  expectCode(aclrtDestroyEvent(event), ACL_SUCCESS, "aclrtDestroyEvent");
  expectCode(aclrtDestroyEvent(event), ACL_ERROR_INVALID_PARAM, "a second aclrtDestroyEvent");
  expectCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  expectCode(aclrtDestroyStream(stream), ACL_ERROR_INVALID_PARAM, "a second aclrtDestroyStream", "aclrtDestroyStream",
             "is not a live stream");
  expectCode(aclrtSynchronizeStream(stream), ACL_ERROR_INVALID_PARAM, "a destroyed stream");
}

void contexts() {
  aclrtContext mine = nullptr;
  aclrtContext current = nullptr;
  int32_t device = -1;
  expectCode(aclrtCreateContext(&mine, 3), ACL_SUCCESS, "aclrtCreateContext(3)");
  expectCode(aclrtGetCurrentContext(&current), ACL_SUCCESS, "aclrtGetCurrentContext");
  expect(current == mine, "a new context becomes current");
  expectCode(aclrtGetDevice(&device), ACL_SUCCESS, "aclrtGetDevice");
  expect(device == 3, "the context's device is current, got " + std::to_string(device));
  expectCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice(0)");
  expectCode(aclrtSetCurrentContext(mine), ACL_SUCCESS, "aclrtSetCurrentContext");
  expectCode(aclrtGetDevice(&device), ACL_SUCCESS, "aclrtGetDevice");
  expect(device == 3, "setting the context sets its device, got " + std::to_string(device));
  expectCode(aclrtCreateContext(&current, 9), ACL_ERROR_RT_INVALID_DEVICEID, "aclrtCreateContext(9)");
  expectCode(aclrtDestroyContext(mine), ACL_SUCCESS, "aclrtDestroyContext");
  expectCode(aclrtDestroyContext(mine), ACL_ERROR_INVALID_PARAM, "a second aclrtDestroyContext");
  expectCode(aclrtSetCurrentContext(mine), ACL_ERROR_INVALID_PARAM, "a destroyed context");
}

}  // namespace

int main() {
  expectCode(aclInit(nullptr), ACL_SUCCESS, "aclInit");
  expectCode(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE, "a second aclInit", "aclInit", "twice");
  expect(std::string(aclrtGetSocName()).find("Ascend910B") == 0, "the SoC name starts with Ascend910B");
  expect(aclDataTypeSize(ACL_FLOAT16) == 2 && aclDataTypeSize(ACL_BF16) == 2 && aclDataTypeSize(ACL_INT64) == 8 &&
             aclDataTypeSize(ACL_DT_UNDEFINED) == 0,
         "aclDataTypeSize");
  devices();
  memory();
  streamsAndEvents();
  contexts();
  expectCode(aclrtResetDevice(3), ACL_SUCCESS, "aclrtResetDevice");
  expectCode(aclFinalize(), ACL_SUCCESS, "aclFinalize");
  expectCode(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE, "a second aclFinalize");
  std::printf("acl runtime: %d checks passed\n", checks);
  return 0;
}
