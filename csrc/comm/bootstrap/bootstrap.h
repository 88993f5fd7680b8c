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

// The creation number of a name for one rank: the same again after a failed creation (so ranks that retry
// meet each other's retry), the next one after a success (so a re-creation never meets a stale record).
class Generation {
 public:
  Generation(std::string scope, int32_t rank);
  uint64_t number() const { return number_; }
  // The creation succeeded: the next creation of this scope takes number() + 1.
  void confirm();

 private:
  std::string scope_;
  int32_t rank_;
  uint64_t number_;
};

class Bootstrap {
 public:
  explicit Bootstrap(Generation generation) : generation_(std::move(generation)) {}
  virtual ~Bootstrap() = default;
  // rankRoot passes `payload`, publishes it and waits until every other rank has read it; the others pass
  // anything and get rankRoot's bytes. Bounded by ATB_OPS_TIMEOUT: a waiting rank's error names the root,
  // the root's names the ranks that never read. The root's rankSize and rankRoot travel with the bytes: a rank
  // that disagrees fails, and makes the root fail, naming both ranks' values. Nothing is left behind.
  virtual std::string broadcast(const std::string& payload) = 0;
  // Where the bytes travel, for messages.
  virtual std::string describe() const = 0;
  // rankRoot could not make what it would have published: the others fail at once with `why` instead of
  // waiting out the timeout. No-op on the other ranks.
  virtual void fail(const std::string& why) = 0;
  // The communicator this bootstrap served is up (see Generation).
  void confirm() { generation_.confirm(); }

 private:
  Generation generation_;
};

// "ranks disagree on ...: rank 0 (pid 11) has rankSize 2, rankRoot 0; rank 1 (pid 12) has rankSize 3, rankRoot
// 0; ...": the message of a creation whose ranks passed different rankSize or rankRoot.
std::string creationMismatch(const std::string& commDomain, int32_t rootRank, int64_t rootPid, int32_t rootSize,
                             int32_t rank, int64_t pid, int32_t size, int32_t root);

// The bootstrap of one communicator creation. `purpose` ("shm", "nccl", "hccl", ...) keeps backends apart;
// the ranks' n-th communicator of a (purpose, job, commDomain) meets the others' n-th (Generation).
std::unique_ptr<Bootstrap> makeBootstrap(const CommConfig& config, const std::string& purpose);

// The torch.distributed store of this job, or null. Installed by the Python package (csrc/ knows no
// Python): `required` asks it to set up the default process group from MASTER_ADDR/MASTER_PORT when
// there is none yet (backend "gloo" needs a store); otherwise it only reports an existing one.
using StoreProvider = std::function<c10::intrusive_ptr<c10d::Store>(bool required)>;
void setStoreProvider(StoreProvider provider);
c10::intrusive_ptr<c10d::Store> jobStore(bool required);

// The job key a config's node-local rendezvous uses (its jobKey, else the environment's).
std::string jobKeyFor(const CommConfig& config);

}  // namespace atb_ops
