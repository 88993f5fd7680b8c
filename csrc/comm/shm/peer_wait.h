// Waiting on a word in shared memory that a peer process advances: spin briefly, then yield, then sleep
// on a futex, so oversubscribed ranks do not burn cores; bounded by a deadline and by the peer's life.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>

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

// Blocks until word >= target. Raises ERROR_COMM_TIMEOUT after `timeout`, ERROR_COMM_PEER_DIED as soon as
// the peer process is gone; both name the peer rank and pid.
void waitReached(std::atomic<uint32_t>& word, std::atomic<uint32_t>& waiters, uint32_t target, const WaitTarget& peer,
                 std::chrono::milliseconds timeout);

// Stores value and wakes sleepers, skipping the syscall when nobody sleeps.
void publish(std::atomic<uint32_t>& word, std::atomic<uint32_t>& waiters, uint32_t value);

// False once the process has exited (zombies count as exited).
bool processAlive(pid_t pid);

}  // namespace atb_ops::shm
