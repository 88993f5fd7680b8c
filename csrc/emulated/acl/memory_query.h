// atb_ops' own addition to the ACL runtime on CPU, not an ACL function: what a range of memory is. atb_ops'
// libatb.so asks it so that a tensor whose deviceData is not device memory (a host buffer, a freed or too small
// block) is refused with ATB's code, where an NPU would fault.
#pragma once

#include <cstddef>

// Values of atbOpsAclMemoryKind.
constexpr int kAtbOpsAclNotAclMemory = 0;  // in no block from aclrtMalloc / aclrtMallocHost (or freed)
constexpr int kAtbOpsAclDevice = 1;        // inside one aclrtMalloc block
constexpr int kAtbOpsAclHost = 2;          // inside one aclrtMallocHost block
constexpr int kAtbOpsAclOverrun = 3;       // starts inside a block but runs past its end

extern "C" int atbOpsAclMemoryKind(const void* ptr, size_t bytes);
