// CPU ranks on several hosts. Shared memory reaches only its own host: a communicator asked for as "hccl", "lccl"
// or "auto" whose ranks turn out to be on several hosts runs in two levels, shared memory within each host and gloo
// between them (two_level_communicator.h; one gloo group when the hosts hold different numbers of ranks, one each, or
// ATB_OPS_TWO_LEVEL=0), and one asked for as "shm" by name fails on every rank at once, naming the hosts. Decided here,
// in comm/, before any backend is built: the operators and the backends never know.
#pragma once

#include "comm/comm_config.h"

namespace atb_ops {

// `config` as it must be built: unchanged unless it is a CPU shm communicator whose ranks meet through a
// torch.distributed store and are not all on this host (core/host.h compares them): then backend "gloo" with
// rankHosts set, from which createCommunicator makes the two levels. Collective over the ranks
// (a host census through the store) when it checks; raises ERROR_INVALID_PARAM for backend "shm" by name.
CommConfig placeAcrossHosts(const CommConfig& config);

}  // namespace atb_ops
