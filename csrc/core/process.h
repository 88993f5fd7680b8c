// Facts about other processes of this host: alive or not, and when they started (pid reuse guard).
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace atb_ops {

// False once the process has exited (zombies count as exited: a killed child stays a zombie until
// its parent reaps it, answering kill(0) while it will never take part again).
bool processAlive(pid_t pid);

// Start time of a process in clock ticks since boot; 0 when unknown.
uint64_t processStartTime(pid_t pid);

}  // namespace atb_ops
