// Waiting on a word in shared memory that a peer process advances: spin briefly, then yield, then sleep
// on a futex, so oversubscribed ranks do not burn cores; bounded by a deadline and by the peer's life.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

#include "core/options.h"
#include "core/process.h"

namespace atb_ops::shm {

struct WaitTarget {
  const char* what;  // collective or phase, for the error message
  int32_t peerRank;
  pid_t peerPid;
};

// True when the sequence counter `value` has reached `target` (wrap-around safe).
inline bool reached(uint32_t value, uint32_t target) {
  return static_cast<int32_t>(value - target) >= 0;
}

// Called about every 100 ms while a wait on rank `peer` sleeps; throws to abandon the wait (that peer died
// or left, a peer aborted the communicator). A peer may advance the word and then leave or exit between
// the waiter's look at the word and this check: the waiter looks once more before it passes the error on.
// Without one, the awaited peer's own liveness is checked.
using HealthCheck = std::function<void(int32_t peer)>;

// Blocks until word >= target: for about 1 ms spins (`spin`: every rank has a core of its own) or polls
// with sched_yield (ranks outnumber cores, so the awaited peer may need this very core), then sleeps on the
// futex.
// Raises ERROR_COMM_TIMEOUT after `timeout` naming the peer, or whatever `health` raises (by default
// ERROR_COMM_PEER_DIED as soon as the awaited peer process is gone).
void waitReached(std::atomic<uint32_t>& word, std::atomic<uint32_t>& waiters, uint32_t target, const WaitTarget& peer,
                 const Timeout& timeout, const HealthCheck& health = nullptr, bool spin = true);

// Waiting on several peers' words at once, for a loop that acts on whichever is ready (the reduction
// pipeline): call progressed() after a pass that moved something and idle() after one that moved nothing.
// idle() spins for about 1 ms (or yields the core, as waitReached), then sleeps in short slices; it raises
// ERROR_COMM_TIMEOUT naming `peer` when nothing moved for `timeout`, or whatever `health` raises (checked
// about every 100 ms while it sleeps).
class IdleWait {
 public:
  IdleWait(const char* what, Timeout timeout, HealthCheck health, bool spin);
  void progressed() {
    idle_ = false;
    suspect_ = -1;
  }
  void idle(int32_t peerRank, pid_t peerPid);

 private:
  const char* what_;
  Timeout timeout_;
  HealthCheck health_;
  bool spin_;
  bool idle_ = false;
  // The peer a health check last found gone: it may have done its part just before it went, so the
  // caller's next pass decides (progressed() clears it; idle() on it again raises).
  int32_t suspect_ = -1;
  std::chrono::steady_clock::time_point since_;
  std::chrono::steady_clock::time_point nextHealth_;
};

// Stores value and wakes sleepers, skipping the syscall when nobody sleeps.
void publish(std::atomic<uint32_t>& word, std::atomic<uint32_t>& waiters, uint32_t value);

}  // namespace atb_ops::shm
