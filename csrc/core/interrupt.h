// Ctrl-C during a wait for a peer. csrc/ knows no Python: the Python package installs a check that tells
// (and takes) a SIGINT that arrived; every long wait polls it between sleeps and abandons the call with
// ERROR_INTERRUPTED, which the Python surfaces raise as KeyboardInterrupt.
#pragma once

namespace atb_ops {

// Returns true when an interrupt arrived (and takes it). Called from any thread, every 100 ms of a wait at most.
using InterruptCheck = bool (*)();
void setInterruptCheck(InterruptCheck check);

// Raises ERROR_INTERRUPTED naming `what` when the installed check reports an interrupt.
void throwIfInterrupted(const char* what);

}  // namespace atb_ops
