// Every block the ACL runtime on CPU has handed out (aclrtMalloc: "device" memory; aclrtMallocHost: host
// memory), so that a free of an unknown pointer, a copy past the end of a block, or device memory passed where
// host memory is expected are reported instead of corrupting memory. Blocks are aligned host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace atb_ops::acl_cpu {

enum class MemoryKind { kDevice, kHost };

const char* kindName(MemoryKind kind);

struct Block {
  uintptr_t begin = 0;
  size_t size = 0;
  MemoryKind kind = MemoryKind::kDevice;
  int32_t device = -1;  // kDevice: the device current when it was allocated
};

class MemoryRegistry {
 public:
  static MemoryRegistry& instance();

  // A new block of `size` bytes (> 0), 64-byte aligned; null when memory is exhausted.
  void* allocate(size_t size, MemoryKind kind, int32_t device);

  // Frees the block that starts at `ptr`. Returns false (and frees nothing) when no block starts there; `found`
  // then holds the block `ptr` falls inside, if any (for the message).
  bool release(void* ptr, MemoryKind kind, Block* found);

  // The block holding [ptr, ptr + bytes); false when no single block does.
  bool lookup(const void* ptr, size_t bytes, Block* found) const;

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  struct Entry {
    Block block;
    std::unique_ptr<void, FreeDeleter> memory;
  };

  mutable std::mutex mutex_;
  std::map<uintptr_t, Entry> blocks_;  // by start address
};

}  // namespace atb_ops::acl_cpu
