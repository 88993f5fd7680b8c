// State that belongs to one process, such as its store servers and its connections to other processes' stores.
#pragma once

#include <sys/types.h>

#include <mutex>

#include "core/process.h"

namespace atb_ops {

// A T of this process's own, used under a lock. A child made by fork() starts from a fresh T: its parent's holds
// threads the child lacks and connections the child must not share (two processes' requests would mix on them),
// so it is left alone, never destroyed (its destructor would join or close what is the parent's).
// Meant to live for the whole process (`static auto* x = new PerProcess<T>()`), so that nothing is torn down while
// the process exits with other threads still using it.
template <typename T>
class PerProcess {
 public:
  // Runs use(T&) with the lock held and returns what it returns.
  template <typename Use>
  auto with(Use&& use) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (value_ == nullptr || owner_ != thisProcessId()) {
      value_ = new T();  // the parent's, if any, stays as it was
      owner_ = thisProcessId();
    }
    return use(*value_);
  }

 private:
  std::mutex mutex_;
  T* value_ = nullptr;
  pid_t owner_ = 0;
};

}  // namespace atb_ops
