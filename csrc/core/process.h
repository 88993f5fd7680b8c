// Facts about other processes of this host: alive or not, and when they started (pid reuse guard).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace atb_ops {

// getpid() without a system call per use: cached, and forgotten in the child of every fork() (pthread_atfork),
// so the hot paths that refuse a forked child's calls stay cheap.
pid_t thisProcessId();

// False once the process has exited (zombies count as exited: a killed child stays a zombie until
// its parent reaps it, answering kill(0) while it will never take part again).
bool processAlive(pid_t pid);

// Start time of a process in clock ticks since boot; 0 when unknown.
uint64_t processStartTime(pid_t pid);

struct Sibling {
  pid_t pid;
  uint64_t startTime;  // processStartTime
  // It runs the program this process runs (the same executable, and for Python the same script, module or -c
  // code, whatever arguments follow), and both were started anew rather than forked by their parent (a forked
  // child keeps its parent's command line): another rank of this job or of a second one.
  bool runsThisProgram;
};

// Live processes with the same parent as this one whose environment gives them no job of their own
// (ATB_OPS_JOB_ID, MASTER_PORT, a launcher's job id) and that are not multiprocessing's helpers: the processes
// a rendezvous scoped by the parent could pair this one with (job_census.h decides which of them may).
// Reads /proc; processes of other users are not listed.
std::vector<Sibling> unscopedSiblings();

// Whether process `pid` has atb_ops' core library (the file this function is in) mapped: it imported atb_ops or
// links it, so it may create a communicator at any time. False when its memory map cannot be read.
bool loadsAtbOps(pid_t pid);

// Set once this process has begun to exit (Python's atexit, through clearCommunicatorCache(shutdown)):
// communicators torn down from then on belong to a process that is going, so peers must learn of a death,
// not of a release they could follow into a new communicator.
void markProcessExiting();
bool processExiting();

// Now, and a tick's length, in the clock of processStartTime (clock ticks since boot).
uint64_t ticksSinceBoot();
uint64_t ticksPerSecond();

}  // namespace atb_ops
