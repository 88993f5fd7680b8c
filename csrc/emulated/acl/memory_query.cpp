#include "emulated/acl/memory_query.h"

#include "emulated/acl/memory_registry.h"

extern "C" int atbOpsAclMemoryKind(const void* ptr, size_t bytes) {
  using atb_ops::acl_cpu::Block;
  using atb_ops::acl_cpu::MemoryKind;
  using atb_ops::acl_cpu::MemoryRegistry;
  Block block;
  if (MemoryRegistry::instance().lookup(ptr, bytes, &block)) {
    return block.kind == MemoryKind::kDevice ? kAtbOpsAclDevice : kAtbOpsAclHost;
  }
  // Where the first byte is in a block, the range is longer than what is left of it.
  return bytes > 0 && MemoryRegistry::instance().lookup(ptr, 1, &block) ? kAtbOpsAclOverrun : kAtbOpsAclNotAclMemory;
}
