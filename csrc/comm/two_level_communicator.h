// CPU ranks on several hosts, as NCCL and HCCL run ranks on several servers: one communicator made of two levels,
// shared memory among the ranks of a host (shm) and gloo among the ranks of the same local index on every host.
// The link between hosts is the limit there, so each collective puts each byte on it once:
//   allreduce   reduce-scatter in the host, all-reduce of its shard among same-local-rank peers, all-gather in the
//               host (each rank's link traffic is 1/L of the data, L ranks per host);
//   allgather   all-gather of each rank's part among same-local-rank peers, then all-gather in the host;
//   broadcast   broadcast among the root's local index across hosts, then broadcast in each host;
//   alltoallv   up to 1 MiB from any rank to other hosts: each rank's chunks for a host in one message to the rank
//               of its local index there, handed on in that host; larger ones as the rest;
//   the rest    (the V forms, send/recv, barrier) on one gloo group of every rank.
// Before any of it moves data, every rank's call (every collective alike) is compared over all ranks in two steps, a
// gather in the host and one between hosts, where a call of a few KiB is also done, and where a repeated
// all-to-all's chunks between hosts ride (its link crossing and the comparison's then one exchange).
// Chosen in comm/ (host_span.h) when the ranks turn out to span hosts with the same number on each; the operators
// never know.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace atb_ops {

// Where each rank is, by host: ranks[h][l] is the global rank of local index l on host h (hosts in the order of
// their lowest rank, local indices in rank order).
struct HostLayout {
  std::vector<std::vector<int32_t>> ranks;
  int32_t host = 0;   // this rank's host index
  int32_t local = 0;  // this rank's index within its host

  // From every rank's host identity (core/host.h), in rank order. Null when the hosts hold different numbers of
  // ranks, or one rank each: then one gloo group is all there is to do.
  static std::unique_ptr<HostLayout> of(const std::vector<std::string>& rankHosts, int32_t rank);
  int32_t hosts() const { return static_cast<int32_t>(ranks.size()); }
  int32_t perHost() const { return static_cast<int32_t>(ranks[0].size()); }
};

// Made through createCommunicator (comm/backend_registry.h) from a config that placeAcrossHosts marked.
std::shared_ptr<Communicator> makeTwoLevelCommunicator(const CommConfig& config, const HostLayout& layout);

}  // namespace atb_ops
