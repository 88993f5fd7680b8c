#include "emulated/hccl/comm_registry.h"

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace atb_ops::hccl_cpu {
namespace {

// Handles step by 16 from an odd-looking base so they read like aligned addresses in logs and never collide
// with small integers a program might pass by mistake.
constexpr uintptr_t kFirstHandle = 0x4cc10000;
constexpr uintptr_t kHandleStep = 16;

struct Registry {
  std::mutex mutex;
  uintptr_t next = kFirstHandle;
  std::unordered_map<uintptr_t, std::shared_ptr<CpuComm>> live;
};

// Never destroyed: communicators still registered at exit are not torn down from a static destructor, where
// the transport they use may already be gone.
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

void* registerComm(std::unique_ptr<CpuComm> comm) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const uintptr_t handle = r.next;
  r.next += kHandleStep;
  r.live.emplace(handle, std::shared_ptr<CpuComm>(std::move(comm)));
  return reinterpret_cast<void*>(handle);
}

std::shared_ptr<CpuComm> findComm(void* handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto it = r.live.find(reinterpret_cast<uintptr_t>(handle));
  return it == r.live.end() ? nullptr : it->second;
}

std::shared_ptr<CpuComm> releaseComm(void* handle) {
  Registry& r = registry();
  std::shared_ptr<CpuComm> comm;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.live.find(reinterpret_cast<uintptr_t>(handle));
    if (it == r.live.end()) return nullptr;
    comm = std::move(it->second);
    r.live.erase(it);
  }
  return comm;
}

}  // namespace atb_ops::hccl_cpu
