// A table of runtime objects (streams, events, contexts) behind opaque handles. A handle is a number from the
// table, never an address and never reused, so a destroyed or foreign handle is reported (the caller returns an
// error) instead of being dereferenced. Each kind of object numbers its handles from its own base, so a stream
// passed where an event is expected is recognised too.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace atb_ops::acl_cpu {

template <typename T>
class HandleTable {
 public:
  explicit HandleTable(uintptr_t base) : next_(base) {}

  void* add(std::shared_ptr<T> object) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uintptr_t handle = next_;
    next_ += kStep;
    live_.emplace(handle, std::move(object));
    return reinterpret_cast<void*>(handle);
  }

  // The object of `handle`; null when unknown or removed.
  std::shared_ptr<T> find(void* handle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = live_.find(reinterpret_cast<uintptr_t>(handle));
    return it == live_.end() ? nullptr : it->second;
  }

  // Removes `handle`; false when it was not live.
  bool remove(void* handle) {
    std::shared_ptr<T> gone;  // released after the lock
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = live_.find(reinterpret_cast<uintptr_t>(handle));
    if (it == live_.end()) return false;
    gone = std::move(it->second);
    live_.erase(it);
    return true;
  }

 private:
  static constexpr uintptr_t kStep = 16;  // handles read like aligned addresses
  mutable std::mutex mutex_;
  uintptr_t next_;
  std::unordered_map<uintptr_t, std::shared_ptr<T>> live_;
};

}  // namespace atb_ops::acl_cpu
