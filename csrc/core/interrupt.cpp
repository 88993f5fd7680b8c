#include "core/interrupt.h"

#include <atomic>

#include "core/status.h"

namespace atb_ops {
namespace {

std::atomic<InterruptCheck> installed{nullptr};

}  // namespace

void setInterruptCheck(InterruptCheck check) {
  installed.store(check, std::memory_order_release);
}

void throwIfInterrupted(const char* what) {
  const InterruptCheck check = installed.load(std::memory_order_acquire);
  ATB_CHECK(
      check == nullptr || !check(), ERROR_INTERRUPTED, what,
      ": interrupted (SIGINT) while waiting for a peer; the call was abandoned and this communicator is unusable");
}

}  // namespace atb_ops
