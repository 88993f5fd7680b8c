// How the ranks of a communicator being created exchange their setup bytes (a segment name, an NCCL unique
// id, HCCL's root info): ONE service every backend uses. Through the torch.distributed store when the job
// has one (it reaches other hosts), otherwise through a node-local rendezvous file in the private folder
// (private_dir.h), scoped to the job (job_scope.h).
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm_config.h"

namespace c10d {
class Store;
}

namespace atb_ops {

// Names carry no creation number: a rank reads each record of its root once, so ranks whose earlier
// communicators ended at different times, or a peer replaced by a fresh process, meet in the root's next
// creation (the root's record is what the ranks agree on).
class Bootstrap {
 public:
  Bootstrap() = default;
  virtual ~Bootstrap() = default;
  // rankRoot passes `payload`, publishes it and waits until every other rank has read it; the others pass
  // anything and get rankRoot's bytes. Bounded by ATB_OPS_TIMEOUT: a waiting rank's error names the root,
  // the root's names the ranks that never read. The root's rankSize and rankRoot travel with the bytes: a rank
  // that disagrees fails, and makes the root fail, naming both ranks' values. Nothing is left behind.
  virtual std::string broadcast(const std::string& payload) = 0;
  // Where the bytes travel, for messages.
  virtual std::string describe() const = 0;
  // After broadcast(): every rank's hostIdentity (core/host.h), in rank order, the same list on every rank. A
  // node-local rendezvous pairs ranks of this host only, so there it is this host for every rank.
  virtual std::vector<std::string> rankHosts() = 0;
  // rankRoot could not make what it would have published: the others fail at once with `why` instead of
  // waiting out the timeout. No-op on the other ranks.
  virtual void fail(const std::string& why) = 0;
};

// "ranks disagree on ...: rank 0 (pid 11) has rankSize 2, rankRoot 0; rank 1 (pid 12) has rankSize 3, rankRoot
// 0; ...": the message of a creation whose ranks passed different rankSize or rankRoot.
std::string creationMismatch(const std::string& commDomain, int32_t rootRank, int64_t rootPid, int32_t rootSize,
                             int32_t rank, int64_t pid, int32_t size, int32_t root);

// The settings of this process that change what a `purpose` communicator puts on the wire:
// "NAME=value;NAME=value" (e.g. ATB_OPS_HCCL_ALLTOALLV for "hccl", ATB_OPS_SHM_EAGER and ATB_OPS_SHM_SPLIT for "shm"),
// empty when there are none. The bootstrap compares them: a rank that differs fails, and makes the root fail, naming
// the variable and both values.
std::string protocolSettings(const CommConfig& config, const std::string& purpose);
// The message for ranks whose protocolSettings differ, or "" when they agree.
std::string settingsMismatch(const std::string& commDomain, int32_t rootRank, int64_t rootPid,
                             const std::string& rootSettings, int32_t rank, int64_t pid, const std::string& mine);

// The bootstrap of one communicator creation. `purpose` ("shm", "nccl", "hccl", ...) keeps backends apart;
// the ranks of a (purpose, job, commDomain) meet in the root's current record.
std::unique_ptr<Bootstrap> makeBootstrap(const CommConfig& config, const std::string& purpose);

// The torch.distributed store of this job, or null. Installed by the Python package (csrc/ knows no
// Python). `required` asks it to set up the default process group from MASTER_ADDR/MASTER_PORT when there is
// none yet (backend "gloo" needs a store), as rank `rank` of `size` unless RANK/WORLD_SIZE say otherwise, with
// `timeout`; otherwise it only reports an existing one.
struct StoreRequest {
  bool required = false;
  int32_t rank = -1;
  int32_t size = 0;
  std::chrono::milliseconds timeout{0};
};
using StoreProvider = std::function<c10::intrusive_ptr<c10d::Store>(const StoreRequest& request)>;
void setStoreProvider(StoreProvider provider);
c10::intrusive_ptr<c10d::Store> jobStore(const StoreRequest& request = StoreRequest{});

// The job key a config's node-local rendezvous uses (its jobKey, else the environment's).
std::string jobKeyFor(const CommConfig& config);

}  // namespace atb_ops
