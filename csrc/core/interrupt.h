// Ctrl-C during a wait for a peer. csrc/ knows no Python: the Python package installs a check that tells
// whether SIGINT arrived (and leaves it pending, so Python raises KeyboardInterrupt once the call returns);
// every long wait polls it between sleeps and abandons the call with ERROR_INTERRUPTED.
#pragma once

namespace atb_ops {

// Returns true when an interrupt is pending. Must be cheap to call from any thread.
using InterruptCheck = bool (*)();
void setInterruptCheck(InterruptCheck check);

// Raises ERROR_INTERRUPTED naming `what` when the installed check reports an interrupt.
void throwIfInterrupted(const char* what);

}  // namespace atb_ops
