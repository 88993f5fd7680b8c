#include "comm/shm/peer_wait.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "core/interrupt.h"
#include "core/status.h"

namespace atb_ops::shm {
namespace {

using Clock = std::chrono::steady_clock;

// How long a waiter stays awake before it sleeps on the futex.
constexpr auto kAwakeFor = std::chrono::microseconds(1000);
constexpr auto kSleepSlice = std::chrono::milliseconds(20);
constexpr auto kLivenessEvery = std::chrono::milliseconds(100);
// IdleWait's sleep between passes once it has been idle for kAwakeFor.
constexpr auto kIdleSlice = std::chrono::microseconds(50);

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

uint32_t* futexWord(std::atomic<uint32_t>& word) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex word must be 32 bits");
  return reinterpret_cast<uint32_t*>(&word);
}

void futexWait(std::atomic<uint32_t>& word, uint32_t expected, std::chrono::nanoseconds slice) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(slice.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(slice.count() % 1000000000);
  // Not FUTEX_PRIVATE: the word lives in memory shared between processes.
  syscall(SYS_futex, futexWord(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

}  // namespace

void waitReached(std::atomic<uint32_t>& word, std::atomic<uint32_t>& waiters, uint32_t target, const WaitTarget& peer,
                 const Timeout& timeout, const HealthCheck& health, bool spin) {
  if (reached(word.load(std::memory_order_acquire), target)) return;
  const auto start = Clock::now();
  // Every rank has a core of its own: spin, keeping the core, so the post is seen within nanoseconds.
  // (sched_yield here would hand the core to any other program for a whole time slice.)
  // Ranks outnumber cores: the peer may be waiting for this very core, so poll with sched_yield.
  while (Clock::now() - start < kAwakeFor) {
    for (int i = 0; i < (spin ? 256 : 16); ++i) {
      if (reached(word.load(std::memory_order_acquire), target)) return;
      cpuRelax();
    }
    if (!spin) sched_yield();  // returns at once when nothing else wants this core
  }
  const auto deadline = start + timeout.value;
  auto nextLivenessCheck = Clock::now();
  while (true) {
    waiters.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = word.load(std::memory_order_seq_cst);
    if (!reached(seen, target)) futexWait(word, seen, kSleepSlice);
    waiters.fetch_sub(1, std::memory_order_seq_cst);
    if (reached(word.load(std::memory_order_acquire), target)) return;
    const auto now = Clock::now();
    // Health before the deadline: a dead peer is reported as dead, not as late.
    if (now >= nextLivenessCheck || now >= deadline) {
      throwIfInterrupted(peer.what);
      if (health) {
        try {
          health(peer.peerRank);
        } catch (const c10::Error&) {
          // The peer may have reached the target and then left: what it wrote before is visible now.
          if (reached(word.load(std::memory_order_acquire), target)) return;
          throw;
        }
      } else {
        ATB_CHECK(processAlive(peer.peerPid), ERROR_COMM_PEER_DIED, peer.what, ": rank ", peer.peerRank, " (pid ",
                  peer.peerPid, ") exited while this rank waited for it");
      }
      nextLivenessCheck = now + kLivenessEvery;
    }
    ATB_CHECK(now < deadline, ERROR_COMM_TIMEOUT, peer.what, ": rank ", peer.peerRank, " (pid ", peer.peerPid,
              ") did not arrive within ", timeout.describe());
  }
}

IdleWait::IdleWait(const char* what, Timeout timeout, HealthCheck health, bool spin)
    : what_(what), timeout_(timeout), health_(std::move(health)), spin_(spin) {}

void IdleWait::idle(int32_t peerRank, pid_t peerPid) {
  if (!idle_) {
    idle_ = true;
    since_ = Clock::now();
    nextHealth_ = since_ + kLivenessEvery;
  }
  cpuRelax();
  if (!spin_) sched_yield();
  const auto now = Clock::now();
  if (now - since_ < kAwakeFor) return;
  // Nothing moved for a while: a peer is descheduled, stuck or gone. Sleep a little between passes.
  std::this_thread::sleep_for(kIdleSlice);
  if (now >= nextHealth_ || suspect_ >= 0) {
    throwIfInterrupted(what_);
    if (health_) {
      try {
        health_(peerRank);
        suspect_ = -1;
      } catch (const c10::Error&) {
        if (suspect_ == peerRank) throw;
        suspect_ = peerRank;
        return;
      }
    } else {
      ATB_CHECK(processAlive(peerPid), ERROR_COMM_PEER_DIED, what_, ": rank ", peerRank, " (pid ", peerPid,
                ") exited while this rank waited for it");
    }
    nextHealth_ = now + kLivenessEvery;
  }
  ATB_CHECK(now - since_ < timeout_.value, ERROR_COMM_TIMEOUT, what_, ": rank ", peerRank, " (pid ", peerPid,
            ") did not arrive within ", timeout_.describe());
}

void publish(std::atomic<uint32_t>& word, std::atomic<uint32_t>& waiters, uint32_t value) {
  word.store(value, std::memory_order_seq_cst);
  if (waiters.load(std::memory_order_seq_cst) != 0) {
    syscall(SYS_futex, futexWord(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
  }
}

}  // namespace atb_ops::shm
