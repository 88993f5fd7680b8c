// CPU ranks on several hosts. Shared memory reaches only its own host: a communicator asked for as "hccl", "lccl"
// or "auto" whose ranks turn out to be on several hosts runs on gloo over the job's store between them, and one
// asked for as "shm" by name fails on every rank at once, naming the hosts. Decided here, in comm/, before any
// backend is built: the operators and the backends never know.
#pragma once

#include "comm/comm_config.h"

namespace atb_ops {

// `config` as it must be built: unchanged unless it is a CPU shm communicator whose ranks meet through a
// torch.distributed store and are not all on this host (core/host.h compares them). Collective over the ranks
// (a host census through the store) when it checks; raises ERROR_INVALID_PARAM for backend "shm" by name.
CommConfig placeAcrossHosts(const CommConfig& config);

}  // namespace atb_ops
