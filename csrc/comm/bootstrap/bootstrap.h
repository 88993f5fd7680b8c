// How the ranks of a communicator being created exchange their setup bytes (a segment name, an NCCL unique
// id, HCCL's root info): ONE service every backend uses. Through the torch.distributed store when the job
// has one (it reaches other hosts), otherwise through a node-local rendezvous file in the private folder
// (private_dir.h), scoped to the job (job_scope.h).
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <functional>
#include <memory>
#include <string>

#include "comm/comm_config.h"

namespace c10d {
class Store;
}

namespace atb_ops {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  // rankRoot passes `payload`, publishes it and waits until every other rank has read it; the others pass
  // anything and get rankRoot's bytes. Bounded by ATB_OPS_TIMEOUT: a waiting rank's error names the root,
  // the root's names the ranks that never read. Nothing is left behind on any path.
  virtual std::string broadcast(const std::string& payload) = 0;
  // Where the bytes travel, for messages.
  virtual std::string describe() const = 0;
};

// The bootstrap of one communicator creation. `purpose` ("shm", "nccl", "hccl", ...) keeps backends apart;
// each call advances a per-(purpose, job, commDomain, rankSize, rank) generation, so the ranks' n-th
// communicator of a name meets the others' n-th and never a stale record of the (n-1)-th.
std::unique_ptr<Bootstrap> makeBootstrap(const CommConfig& config, const std::string& purpose);

// The torch.distributed store of this job, or null. Installed by the Python package (csrc/ knows no
// Python): `required` asks it to set up the default process group from MASTER_ADDR/MASTER_PORT when
// there is none yet (backend "gloo" needs a store); otherwise it only reports an existing one.
using StoreProvider = std::function<c10::intrusive_ptr<c10d::Store>(bool required)>;
void setStoreProvider(StoreProvider provider);
c10::intrusive_ptr<c10d::Store> jobStore(bool required);

// The job key a config's node-local rendezvous uses (its jobKey, else the environment's).
std::string jobKeyFor(const CommConfig& config);

// The next generation number of `scope` for `rank` in this process.
uint64_t nextGeneration(const std::string& scope, int32_t rank);

}  // namespace atb_ops
