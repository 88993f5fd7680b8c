// Memory: aclrtMalloc hands out "device" memory, aclrtMallocHost host memory; both are aligned host memory
// tracked by the registry, so every pointer a copy or a free names is checked against what was handed out.
// Copies and fills are done when called (a stream argument only has to be valid).
#include <acl/acl_rt.h>

#include <cstring>

#include "emulated/acl/acl_status.h"
#include "emulated/acl/memory_registry.h"
#include "emulated/acl/runtime_state.h"

namespace atb_ops::acl_cpu {

// Defined in streams.cpp: ACL_SUCCESS for the default stream (null) and live streams.
aclError checkStream(const char* caller, aclrtStream stream);

namespace {

bool knownPolicy(aclrtMemMallocPolicy policy) {
  const unsigned value = static_cast<unsigned>(policy);
  // One of the eight placements, optionally with a bandwidth type and the read-only flag.
  const unsigned placement = value & 0xffu;
  const unsigned rest = value & ~0xffu;
  const unsigned flags =
      ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH | ACL_MEM_ACCESS_USER_SPACE_READONLY;
  return placement <= ACL_MEM_MALLOC_HUGE1G_ONLY_P2P && (rest & ~flags) == 0;
}

aclError allocate(const char* caller, void** ptr, size_t size, MemoryKind kind) {
  if (ptr == nullptr)
    return fail(ACL_ERROR_INVALID_PARAM, concat(caller, ": the pointer to return the memory in is null"));
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, concat(caller, ": size is 0"));
  void* memory = MemoryRegistry::instance().allocate(size, kind, currentDevice());
  if (memory == nullptr) {
    return fail(ACL_ERROR_BAD_ALLOC, concat(caller, ": cannot allocate ", size, " bytes of ", kindName(kind)));
  }
  *ptr = memory;
  return ACL_SUCCESS;
}

aclError release(const char* caller, void* ptr, MemoryKind kind) {
  if (ptr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, concat(caller, ": the pointer is null"));
  Block found;
  if (MemoryRegistry::instance().release(ptr, kind, &found)) return ACL_SUCCESS;
  const void* start = reinterpret_cast<const void*>(found.begin);
  if (found.begin == 0) {
    return fail(ACL_ERROR_INVALID_PARAM,
                concat(caller, ": ", ptr, " is not memory from ",
                       kind == MemoryKind::kDevice ? "aclrtMalloc" : "aclrtMallocHost", " (or was freed already)"));
  }
  if (found.kind != kind) {
    return fail(ACL_ERROR_INVALID_PARAM, concat(caller, ": ", ptr, " is ", kindName(found.kind), "; free it with ",
                                                found.kind == MemoryKind::kDevice ? "aclrtFree" : "aclrtFreeHost"));
  }
  return fail(ACL_ERROR_INVALID_PARAM, concat(caller, ": ", ptr, " points inside the ", found.size, "-byte block at ",
                                              start, "; free the block's start"));
}

// Which side of a copy is device memory, by kind; DEFAULT: whatever each pointer is.
enum class Side { kHost, kDevice, kAny };

bool sidesOf(aclrtMemcpyKind kind, Side* dst, Side* src) {
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: *dst = Side::kHost, *src = Side::kHost; return true;
    case ACL_MEMCPY_HOST_TO_DEVICE:
    case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: *dst = Side::kDevice, *src = Side::kHost; return true;
    case ACL_MEMCPY_DEVICE_TO_HOST: *dst = Side::kHost, *src = Side::kDevice; return true;
    case ACL_MEMCPY_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE: *dst = Side::kDevice, *src = Side::kDevice; return true;
    case ACL_MEMCPY_DEFAULT: *dst = Side::kAny, *src = Side::kAny; return true;
  }
  return false;
}

// ACL_SUCCESS when [ptr, ptr + bytes) is on `side`: inside one aclrtMalloc block for the device side; outside
// every aclrtMalloc block for the host side (the host cannot address device memory).
aclError checkSide(const char* caller, const char* name, const void* ptr, size_t bytes, Side side) {
  Block block;
  const bool inBlock = MemoryRegistry::instance().lookup(ptr, bytes, &block);
  if (side == Side::kDevice && !(inBlock && block.kind == MemoryKind::kDevice)) {
    return fail(ACL_ERROR_INVALID_PARAM,
                concat(caller, ": ", name, " [", ptr, ", +", bytes, ") is not inside device memory from aclrtMalloc"));
  }
  if (side == Side::kHost && inBlock && block.kind == MemoryKind::kDevice) {
    return fail(ACL_ERROR_INVALID_PARAM,
                concat(caller, ": ", name, " ", ptr, " is device memory (aclrtMalloc), but the copy kind says host"));
  }
  return ACL_SUCCESS;
}

aclError copy(const char* caller, void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  Side dstSide = Side::kAny;
  Side srcSide = Side::kAny;
  if (!sidesOf(kind, &dstSide, &srcSide)) {
    return fail(ACL_ERROR_INVALID_PARAM,
                concat(caller, ": kind ", static_cast<int>(kind), " is not an aclrtMemcpyKind"));
  }
  if (count > destMax) {
    return fail(ACL_ERROR_INVALID_PARAM, concat(caller, ": count ", count, " exceeds destMax ", destMax));
  }
  if (count == 0) return ACL_SUCCESS;
  if (dst == nullptr || src == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM,
                concat(caller, ": ", dst == nullptr ? "dst" : "src", " is null (count ", count, ")"));
  }
  aclError rc = checkSide(caller, "dst", dst, count, dstSide);
  if (rc == ACL_SUCCESS) rc = checkSide(caller, "src", src, count, srcSide);
  if (rc != ACL_SUCCESS) return rc;
  std::memmove(dst, src, count);
  return ACL_SUCCESS;
}

aclError fill(const char* caller, void* devPtr, size_t maxCount, int32_t value, size_t count) {
  if (count > maxCount) {
    return fail(ACL_ERROR_INVALID_PARAM, concat(caller, ": count ", count, " exceeds maxCount ", maxCount));
  }
  if (count == 0) return ACL_SUCCESS;
  if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, concat(caller, ": devPtr is null"));
  Block block;
  if (!MemoryRegistry::instance().lookup(devPtr, count, &block)) {
    return fail(ACL_ERROR_INVALID_PARAM, concat(caller, ": [", devPtr, ", +", count,
                                                ") is not inside memory from aclrtMalloc or aclrtMallocHost"));
  }
  std::memset(devPtr, value, count);  // the low byte of value, as memset
  return ACL_SUCCESS;
}

}  // namespace
}  // namespace atb_ops::acl_cpu

using atb_ops::acl_cpu::MemoryKind;

extern "C" {

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  ACL_CPU_CHECK(atb_ops::acl_cpu::knownPolicy(policy), ACL_ERROR_INVALID_PARAM, "policy ",
                static_cast<unsigned>(policy), " is not an aclrtMemMallocPolicy");
  ACL_CPU_CHECK(atb_ops::acl_cpu::currentDevice() >= 0, ACL_ERROR_RT_CONTEXT_NULL,
                "this thread has no current device (call aclrtSetDevice first)");
  return atb_ops::acl_cpu::allocate(__func__, devPtr, size, MemoryKind::kDevice);
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  return atb_ops::acl_cpu::allocate(__func__, hostPtr, size, MemoryKind::kHost);
}

aclError aclrtFree(void* devPtr) {
  return atb_ops::acl_cpu::release(__func__, devPtr, MemoryKind::kDevice);
}

aclError aclrtFreeHost(void* hostPtr) {
  return atb_ops::acl_cpu::release(__func__, hostPtr, MemoryKind::kHost);
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  return atb_ops::acl_cpu::copy(__func__, dst, destMax, src, count, kind);
}

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  const aclError rc = atb_ops::acl_cpu::checkStream(__func__, stream);
  return rc != ACL_SUCCESS ? rc : atb_ops::acl_cpu::copy(__func__, dst, destMax, src, count, kind);
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  return atb_ops::acl_cpu::fill(__func__, devPtr, maxCount, value, count);
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  const aclError rc = atb_ops::acl_cpu::checkStream(__func__, stream);
  return rc != ACL_SUCCESS ? rc : atb_ops::acl_cpu::fill(__func__, devPtr, maxCount, value, count);
}

}  // extern "C"
