// Who may pair in a node-local rendezvous. Every process about to meet others there claims its rank with a small
// file in the private folder (clm.<pid>.<rank>.<rankSize>.<scope hash>). Claims make exact what /proc alone
// cannot show: two live processes claiming one rank of one scope are two jobs (every claimant fails, naming
// ATB_OPS_JOB_ID), and a sibling that claimed another commDomain is no rank of this one.
// Where the scope is a proof (a job id, a launcher's), a claim is withdrawn when its creation ends. Where it is
// only the parent-process guess (job_scope.h):
// - a claim stays live while the communicator made with it lives, so a rank of another job that arrives minutes
//   later still meets it (it waits for that communicator to go, and refuses if it never does; two claimants both
//   creating refuse at once); afterwards it stays until its process exits, showing that the process took part;
// - a rank waits until each of the parent's other processes that runs its program (started anew, not forked), has
//   atb_ops loaded or is young enough to be loading it has claimed something, refusing when more of them may want
//   this communicator than it has ranks.
//   Processes that declared they take no rank (multiprocessing's Manager, see declareNoRank) and those without
//   atb_ops (a log tailer) are never waited for.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "comm/bootstrap/private_dir.h"
#include "core/options.h"
#include "core/process.h"

namespace atb_ops {

struct CensusSlot {
  std::string scope;   // the rendezvous key: purpose | job key | commDomain
  std::string loose;   // purpose | commDomain: the same communicator in any job (for messages)
  std::string jobKey;  // for messages
  std::string domain;
  int32_t rank = 0;
  int32_t rankSize = 1;
};

// How doctor recognises the census's files and reads who owns them (op_plugin's node_files publishes it).
struct CensusFileFormat {
  uint64_t claimMagic;
  size_t claimPidOffset;        // int32
  size_t claimStartTimeOffset;  // uint64, processStartTime
  uint64_t verdictMagic;
  size_t verdictCountOffset;   // int32
  size_t verdictPidsOffset;    // int32[verdictPids]
  size_t verdictStartsOffset;  // uint64[verdictPids]
  int verdictPids;
};
CensusFileFormat censusFileFormat();

class JobCensus {
 public:
  // Claims `slot` (raises ERROR_RT_FAIL when the private folder refuses the file).
  JobCensus(const Options& options, CensusSlot slot);
  ~JobCensus();
  JobCensus(const JobCensus&) = delete;
  JobCensus& operator=(const JobCensus&) = delete;

  // Before pairing. Raises ERROR_INVALID_PARAM when two jobs could pair: another live process claims this rank of
  // this scope, a rank of this scope already found that, or (parent scope) more young siblings may want this
  // communicator than it has ranks until `deadline`. Interruptible (Ctrl-C).
  void awaitUnambiguous(std::chrono::steady_clock::time_point deadline);
  // After pairing: a second claimant that arrived meanwhile fails this rank too (never data of two jobs).
  void recheck();
  // After pairing, under a parent scope: the claim stays live while the communicator being made lives (it takes
  // the hold from the innermost MembershipHolds of this thread; without one, for the process's life).
  void holdWhileCommunicatorLives();
  // For a rank that timed out: the processes waiting for the same commDomain in other jobs ("rank 1 (pid 12,
  // job 'parent:10:77') ..."), empty if none.
  std::string strangers() const;

  // Removes claims and verdicts whose processes are gone (a creation that was killed). Returns how many.
  static int sweepStale(const Options& options);
  // This process will take no rank (a multiprocessing Manager's server): parent-scoped ranks never wait for it.
  static void declareNoRank(const Options& options);

 private:
  // Who else a refusal fails: nobody; this scope's claimants while any of them lives; or also, while the parent
  // lives, any rank of this scope that arrives later.
  enum class Tell { kNobody, kClaimants, kClaimantsAndLaterRanks };
  [[noreturn]] void refuse(const std::string& why, Tell tell);
  // Refuses (and tells every claimant) when a rank of this scope has two claimants; `when` adds to the message.
  void refuseDuplicates(std::map<int32_t, std::vector<pid_t>> byRank, const char* when);
  void checkVerdict() const;
  std::string describe() const;
  // Whether an unclaimed sibling has atb_ops loaded (remembered once seen).
  bool withAtbOps(const Sibling& sibling);

  Options options_;
  CensusSlot slot_;
  uint64_t scopeHash_;
  uint64_t looseHash_;
  bool parentScoped_;
  std::string dir_;
  std::shared_ptr<MappedFile> claim_;
  std::set<std::pair<pid_t, uint64_t>> loaded_;
};

// What makes a communicator opens one (createCommunicator, per thread, nested): it collects the holds of the claims
// its rendezvous made, which the communicator keeps until it goes.
class MembershipHolds {
 public:
  MembershipHolds();
  ~MembershipHolds();
  MembershipHolds(const MembershipHolds&) = delete;
  MembershipHolds& operator=(const MembershipHolds&) = delete;
  std::vector<std::shared_ptr<void>> take();
};

}  // namespace atb_ops
