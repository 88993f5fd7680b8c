// Settings read from the environment, in one place so README can list them.
#pragma once

#include <chrono>
#include <cstdint>

namespace atb_ops {

// ATB_OPS_TIMEOUT (seconds, default 300): the longest any rank waits for a peer.
std::chrono::milliseconds peerTimeout();

// ATB_OPS_STRICT_BACKEND=1: asking for a backend this machine cannot run is an error, not a fallback.
bool strictBackend();

// ATB_OPS_CHECK=1/0: ranks cross-check the whole count matrix before moving data, or not. Unset: the
// backend's default (shm checks for free on every call; gloo checks, since gloo aborts the process on a
// message larger than the receiver expects).
bool crossRankCheck(bool backendDefault);

// ATB_OPS_SHM_EAGER (bytes, default 16384): shm messages up to this size travel through the shared
// segment (two cached memcpys, no system call, no completion barrier); larger ones are copied
// straight between the ranks' buffers. 0 turns the eager path off.
int64_t shmEagerLimit();

// ATB_OPS_SHM_SPLIT=0/1 (default 1): shm lets a sender push part of a large message while its receiver
// pulls the rest, so both cores work when some ranks receive more than others (skewed layouts).
bool shmSplit();

// ATB_OPS_SHM_ARENA (bytes, default half the physical memory, at most 64 GiB): address space reserved
// for the process's shared-memory arena (atb_ops.shm_empty, execute() outputs on shm). Pages are
// allocated when first used. 0 turns the arena off.
int64_t shmArenaBytes();

}  // namespace atb_ops
