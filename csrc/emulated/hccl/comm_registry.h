// The communicators HCCL's C API on CPU has handed out. An HcclComm is a number from this registry, not an
// address, and numbers are never reused, so a destroyed or made-up handle is recognised (the API returns
// HCCL_E_PARA) instead of being dereferenced. A call holds its own reference: a destroy racing a call frees the
// communicator when that call returns.
#pragma once

#include <memory>

#include "emulated/hccl/cpu_comm.h"

namespace atb_ops::hccl_cpu {

// Takes ownership and returns the new handle (never null).
void* registerComm(std::unique_ptr<CpuComm> comm);

// The live communicator of `handle`; null when the handle is unknown or destroyed.
std::shared_ptr<CpuComm> findComm(void* handle);

// Forgets `handle` and returns its communicator (freed with the last reference); null when it is not live.
std::shared_ptr<CpuComm> releaseComm(void* handle);

}  // namespace atb_ops::hccl_cpu
