// Settings read from the environment, in one place so README can list them.
#pragma once

#include <chrono>

namespace atb_ops {

// ATB_OPS_TIMEOUT (seconds, default 300): the longest any rank waits for a peer.
std::chrono::milliseconds peerTimeout();

// ATB_OPS_STRICT_BACKEND=1: asking for a backend this machine cannot run is an error, not a fallback.
bool strictBackend();

// ATB_OPS_CHECK=1/0: ranks cross-check the whole count matrix before moving data, or not. Unset: the
// backend's default (shm checks for free on every call; gloo checks, since gloo aborts the process on a
// message larger than the receiver expects).
bool crossRankCheck(bool backendDefault);

}  // namespace atb_ops
