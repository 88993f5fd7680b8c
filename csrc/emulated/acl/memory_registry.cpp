#include "emulated/acl/memory_registry.h"

#include <cstdlib>
#include <iterator>

namespace atb_ops::acl_cpu {
namespace {

constexpr size_t kAlignment = 64;  // a cache line; at least the 32 bytes ACL guarantees for device memory

}  // namespace

const char* kindName(MemoryKind kind) {
  return kind == MemoryKind::kDevice ? "device memory (aclrtMalloc)" : "host memory (aclrtMallocHost)";
}

void MemoryRegistry::FreeDeleter::operator()(void* p) const {
  std::free(p);
}

MemoryRegistry& MemoryRegistry::instance() {
  static auto* registry = new MemoryRegistry();  // never destroyed: blocks may be freed until the process ends
  return *registry;
}

void* MemoryRegistry::allocate(size_t size, MemoryKind kind, int32_t device) {
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded < size) return nullptr;  // size near SIZE_MAX
  std::unique_ptr<void, FreeDeleter> memory(std::aligned_alloc(kAlignment, rounded));
  if (!memory) return nullptr;
  void* ptr = memory.get();
  const auto begin = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  blocks_.emplace(begin, Entry{Block{begin, size, kind, device}, std::move(memory)});
  return ptr;
}

bool MemoryRegistry::release(void* ptr, MemoryKind kind, Block* found) {
  std::unique_ptr<void, FreeDeleter> freed;  // released after the lock
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == blocks_.end() || it->second.block.kind != kind) {
    *found = Block{};
    if (it != blocks_.end()) {
      *found = it->second.block;
    } else {
      auto after = blocks_.upper_bound(reinterpret_cast<uintptr_t>(ptr));
      if (after != blocks_.begin()) {
        const Block& before = std::prev(after)->second.block;
        if (reinterpret_cast<uintptr_t>(ptr) < before.begin + before.size) *found = before;
      }
    }
    return false;
  }
  freed = std::move(it->second.memory);
  blocks_.erase(it);
  return true;
}

bool MemoryRegistry::lookup(const void* ptr, size_t bytes, Block* found) const {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  auto after = blocks_.upper_bound(address);
  if (after == blocks_.begin()) return false;
  const Block& block = std::prev(after)->second.block;
  if (address - block.begin > block.size || bytes > block.size - (address - block.begin)) return false;
  *found = block;
  return true;
}

}  // namespace atb_ops::acl_cpu
