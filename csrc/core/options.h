// Every ATB_OPS_* setting, parsed from the environment by one function with one rule per kind of value.
// A communicator takes a snapshot when it is created, so a hot path never reads the environment.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace atb_ops {

// How long a rank waits for a peer, and the setting that decided it, which every timeout message names.
struct Timeout {
  std::chrono::milliseconds value{std::chrono::seconds(300)};
  // The communicator of a torch.distributed "atb_ops" group waits as long as the group's timeout.
  bool fromGroup = false;
  // ATB_OPS_TIMEOUT was set: it bounds a group's communicator too, where it is the shorter.
  bool fromEnvironment = false;
  // How much sooner than `value` this communicator gives up: the part between hosts of a two-level one, so that it
  // fails first and tells the ranks waiting for it within its host, which then name the lost host, not it.
  std::chrono::milliseconds early{0};

  const char* name() const { return fromGroup ? "the group's timeout" : "ATB_OPS_TIMEOUT"; }
  double seconds() const { return std::chrono::duration<double>(value).count(); }
  // "ATB_OPS_TIMEOUT=30 s" or "the group's timeout of 30 s".
  std::string describe() const;
};

struct Options {
  // ATB_OPS_TIMEOUT (seconds, default 300): the longest any rank waits for a peer. Finite and > 0 after
  // conversion to milliseconds; values above 24 h are clamped to 24 h with a warning.
  Timeout timeout;
  // ATB_OPS_STRICT_BACKEND: asking for a backend this machine cannot run is an error, not a fallback.
  bool strictBackend = false;
  // ATB_OPS_STRICT_PARAMS: an unknown key in a param or variant pack is an error, not a warning (ATB ignores them).
  bool strictParams = false;
  // ATB_OPS_SHM_EAGER (bytes, 0..1 MiB, default 65536): shm messages up to this size travel through the
  // shared segment; 0 turns that path off. Reductions use at most 16 KiB of it (shm_communicator.cpp).
  int64_t shmEager = 65536;  // 2 ranks, from 16 KiB: alltoallv 128 KiB 24 -> 14 us
  // ATB_OPS_SHM_SPLIT (default on): shm senders push part of large messages to busier receivers.
  bool shmSplit = true;
  // ATB_OPS_SHM_ARENA (bytes; unset: half the RAM, at most 64 GiB; 0: off): the shared-memory arena.
  std::optional<int64_t> shmArenaBytes;
  // ATB_OPS_HUGEPAGES (default on): advise fresh CPU outputs of >= 32 MiB onto transparent huge pages, and
  // collapse reused buffers of >= 4 MiB that shm peers copy in place onto them (core/memory.h).
  bool hugePages = true;
  // ATB_OPS_HCCL_ALLTOALLV: "alltoallv" (HcclAlltoAllV) or "p2p" (HcclBatchSendRecv).
  std::string hcclAlltoallv = "alltoallv";
  // ATB_OPS_HCCL_BLOCKING: the host waits for each HCCL collective.
  bool hcclBlocking = false;
  // ATB_OPS_RANK_TABLE_PORT (default 61001): the port of the store that ranks of a rank table listing several
  // servers meet on, served by the first rank of the first server (comm/bootstrap/rank_table.h).
  int64_t rankTablePort = 61001;
  // ATB_OPS_TWO_LEVEL (default on): CPU ranks spanning hosts, the same number on each, run shared memory within a
  // host and gloo between hosts (comm/two_level_communicator.h); 0: one gloo group of every rank.
  bool twoLevel = true;
  // ATB_OPS_GLOO_STREAMS (1..4, default 2): TCP connections between each pair of ranks of a gloo group atb_ops
  // makes whose hosts hold one rank each; large all-to-all messages are split over them, as one stream does not
  // fill a link (comm/gloo/gloo_communicator.h). 1: one connection, as torch's gloo.
  int64_t glooStreams = 2;
  // ATB_OPS_CPU_PATH: auto, shm or group (atb_ops.distributed on CPU tensors).
  std::string cpuPath = "auto";
  // ATB_OPS_NPU_NAME: the emulated NPU's name, which ATB's SoC-specific checks read (empty: unset, an Atlas A2,
  // "Ascend910B"; the emulation's torch_npu and aclrtGetSocName report the same).
  std::string npuName;
  // ATB_OPS_SHM_DIR (default /dev/shm): where the per-user folder of segments and rendezvous files lives.
  std::string shmDir = "/dev/shm";
  // The job scope of node-local rendezvous: ATB_OPS_JOB_ID, else a torchrun job (MASTER_ADDR:MASTER_PORT with
  // TORCHELASTIC_RUN_ID), else a launcher's job id, else the parent-process guess (job_scope.h).
  std::string jobId;
  std::string masterAddr;
  std::string masterPort;
  std::string elasticRunId;
  // A launcher's job id (PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid, SLURM_JOB_ID.SLURM_STEP_ID), empty if none.
  std::string launcherJob;
  // How many of the job's ranks the launcher started on this host (LOCAL_WORLD_SIZE from torchrun,
  // OMPI_COMM_WORLD_LOCAL_SIZE from mpirun, MPI_LOCALNRANKS from MPICH); -1 when no launcher says.
  int64_t launcherLocalRanks = -1;
};

// Parses the environment now. Raises ERROR_INVALID_PARAM naming the variable and its value.
Options readOptions();

// A process's environment variable, empty values read as unset (as readOptions reads them).
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
// The job a launcher gave a process ("pmix:<namespace>", "ompi:<jobid>", "slurm:<job>.<step>"), or "".
std::string launcherJobOf(const EnvLookup& env);
// Whether a process's environment alone proves its job: ATB_OPS_JOB_ID, a launcher's job, or a torchrun job
// (MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RUN_ID: its agent holds the port). MASTER_ADDR/MASTER_PORT alone
// prove nothing (nothing holds the port: two jobs can export the same pair). The one rule for this process's job
// key and for a sibling's (core/process.cpp), so a rank never skips a sibling that scopes itself by the guess.
bool environmentProvesJob(const EnvLookup& env);
// environmentProvesJob of this process's environment.
bool thisEnvironmentProvesJob();

// The longest ATB_OPS_TIMEOUT honoured.
constexpr std::chrono::hours kMaxTimeout{24};

// The parsers, exposed for tests: each raises ERROR_INVALID_PARAM naming `name` and `text`.
namespace env_parse {
bool flag(const std::string& name, const std::string& text);
std::chrono::milliseconds seconds(const std::string& name, const std::string& text);
int64_t bytes(const std::string& name, const std::string& text, int64_t lo, int64_t hi);
int64_t integer(const std::string& name, const std::string& text, int64_t lo, int64_t hi);
std::string choice(const std::string& name, const std::string& text, std::initializer_list<const char*> allowed);
}  // namespace env_parse

// The options as name -> text, for Python (atb_ops reads no ATB_OPS_* variable itself).
std::map<std::string, std::string> describeOptions(const Options& o);

}  // namespace atb_ops
