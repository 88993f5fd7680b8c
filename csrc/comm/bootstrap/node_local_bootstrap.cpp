#include "comm/bootstrap/node_local_bootstrap.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "comm/bootstrap/job_census.h"
#include "comm/bootstrap/job_scope.h"
#include "comm/bootstrap/private_dir.h"
#include "core/host.h"
#include "core/interrupt.h"
#include "core/layout.h"
#include "core/process.h"
#include "core/status.h"

namespace atb_ops {
namespace {

using Clock = std::chrono::steady_clock;

// A node-local rendezvous pairs this host's ranks only: a rank that waits for ranks it cannot see may be waiting
// for ranks elsewhere, and is told how those meet (root and joiners alike).
constexpr char kOtherHosts[] =
    "; ranks on other hosts meet through torch.distributed, a rank table, HCCL root info or a caller's hcclComm";

// The record file: this header, one read flag per rank, then the payload.
struct RecordHeader {
  std::atomic<uint64_t> magic;
  uint64_t keyHash;
  int32_t rankSize;
  int32_t rootRank;
  int32_t rootPid;
  int32_t payloadBytes;
  uint64_t rootStartTime;
  std::atomic<int32_t> readers;
  // A rank that disagrees with the root (rankSize, rankRoot) writes why here, so the root fails at once with
  // the same message instead of waiting out the timeout; a root that failed before publishing leaves a record
  // with its reason, so the others fail at once too.
  std::atomic<int32_t> conflict;  // kNoConflict, kConflictWriting, kConflictReported, kRootFailed
  char reason[464];
  // When a root's failure record was written, in clock ticks since boot (the clock of processStartTime): a
  // rank that started before then is of the same run, and takes the reason even after the root has exited.
  uint64_t failedAtTicks;
  char settings[128];  // the root's protocolSettings
};
constexpr size_t kStablePrefix = 48;
static_assert(offsetof(RecordHeader, rootPid) == 24 && offsetof(RecordHeader, rootStartTime) == 32 &&
                  offsetof(RecordHeader, reason) == kStablePrefix,
              "op_plugin/python/module.cpp (node_files) publishes this layout for doctor");

constexpr int32_t kMaxPayload = 1 << 20;
constexpr int32_t kNoConflict = 0;
constexpr int32_t kConflictWriting = 1;
constexpr int32_t kConflictReported = 2;
constexpr int32_t kRootFailed = 3;

uint8_t* flagsOf(const MappedFile& f) {
  return static_cast<uint8_t*>(f.base()) + sizeof(RecordHeader);
}

char* payloadOf(const MappedFile& f, int32_t rankSize) {
  return reinterpret_cast<char*>(flagsOf(f) + rankSize);
}

RecordHeader& headerOf(const MappedFile& f) {
  return *static_cast<RecordHeader*>(f.base());
}

void pause(int& attempt, const std::string& what) {
  throwIfInterrupted(what.c_str());
  std::this_thread::sleep_for(std::chrono::microseconds(attempt < 50 ? 200 : 2000));
  ++attempt;
}

enum class Found { kNothing, kStale, kLive };

// What is at the record's name. A record of a dead root (a crashed run) is stale; anything that is not a
// record of this key raises at once, on every rank, naming the path.
Found inspect(const std::string& path, uint64_t keyHash, MappedFile* live) {
  MappedFile f = MappedFile::open(path);  // raises for directories, links, FIFOs, other owners, modes
  if (!f.valid()) return Found::kNothing;
  // The first kStablePrefix bytes (magic, root pid and start time) keep their place in every version, so a
  // record a crashed run of an older version left is still recognised as stale.
  ATB_CHECK(f.size() >= kStablePrefix && headerOf(f).magic.load(std::memory_order_acquire) == kRendezvousMagic,
            ERROR_RT_FAIL, "rendezvous file '", path, "' holds ", f.size(),
            " bytes that are not an atb_ops rendezvous record; remove it");
  const RecordHeader& h = headerOf(f);
  const bool alive = processAlive(h.rootPid) && processStartTime(h.rootPid) == h.rootStartTime;
  if (!alive) return Found::kStale;
  ATB_CHECK(
      f.size() >= sizeof(RecordHeader) && h.keyHash == keyHash && h.rankSize > 0 &&
          f.size() >= sizeof(RecordHeader) + static_cast<size_t>(h.rankSize) + static_cast<size_t>(h.payloadBytes),
      ERROR_RT_FAIL, "rendezvous file '", path, "' belongs to another communicator (rankSize ", h.rankSize,
      ", root pid ", h.rootPid, ", which is alive); two jobs hash to one name: set ATB_OPS_JOB_ID");
  if (live != nullptr) *live = std::move(f);
  return Found::kLive;
}

class NodeLocalBootstrap final : public Bootstrap {
 public:
  NodeLocalBootstrap(const CommConfig& c, const std::string& key, const std::string& purpose,
                     const std::string& settings)
      : options_(c.options),
        settings_(settings.substr(0, sizeof(RecordHeader::settings) - 1)),
        rank_(c.rank),
        size_(c.rankSize),
        root_(c.rankRoot),
        timeout_(c.options.timeout),
        keyHash_(fnv1a(key)),
        census_(c.commMode == CommMode::MULTI_PROCESS),
        censusSlot_{key, purpose + "|" + c.commDomain, jobKeyFor(c), c.commDomain, c.rank, c.rankSize},
        domain_(c.commDomain),
        dir_(privateDir(c.options)),
        path_(rendezvousPath(c.options, key)),
        what_("node-local rendezvous '" + path_ + "' (commDomain '" + c.commDomain + "', rankSize " +
              std::to_string(c.rankSize) + ", job '" + jobKeyFor(c) + "')") {}

  std::string describe() const override { return what_; }

  std::vector<std::string> rankHosts() override {
    return std::vector<std::string>(static_cast<size_t>(size_), hostIdentity(options_));
  }

  std::string broadcast(const std::string& payload) override {
    // A communicator of one rank meets nobody: no file, no census, so single-rank processes of one parent (one
    // worker per device) never take each other for two jobs.
    if (size_ == 1) return payload;
    if (!census_) return rank_ == root_ ? publish(payload) : fetch();
    // Claimed before pairing and held until the creation ends: two processes of one rank are two jobs, and a
    // parent-scoped rank waits until its parent's young processes are accounted for (job_census.h).
    if (!claim_) {
      claim_ = std::make_unique<JobCensus>(options_, censusSlot_);
      try {
        claim_->awaitUnambiguous(Clock::now() + timeout_.value);
      } catch (const c10::Error& e) {
        tellPeers(e.what_without_backtrace());
        throw;
      }
    }
    std::string bytes = rank_ == root_ ? publish(payload) : fetch();
    try {
      claim_->recheck();
    } catch (const c10::Error& e) {
      tellPeers(e.what_without_backtrace());
      throw;
    }
    claim_->holdWhileCommunicatorLives();
    return bytes;
  }

 private:
  std::string publish(const std::string& payload) {
    ATB_CHECK(payload.size() <= static_cast<size_t>(kMaxPayload), ERROR_INTERNAL_ERROR, "bootstrap payload of ",
              payload.size(), " bytes is too large");
    MappedFile live;
    if (inspect(path_, keyHash_, &live) == Found::kLive && headerOf(live).rootPid == ::getpid()) {
      unlinkIfSame(live, path_);  // this root's own failure record of an earlier attempt: a retry replaces it
    } else if (live.valid()) {
      // Another live root of this rendezvous: both fail, with one message.
      const RecordHeader& h = headerOf(live);
      const std::string why =
          h.rankSize != size_ || h.rootRank != root_
              ? creationMismatch(domain_, h.rootRank, h.rootPid, h.rankSize, rank_, ::getpid(), size_, root_)
              : c10::str("rank ", root_, " of the communicator of commDomain '", domain_, "' is claimed by pid ",
                         h.rootPid, " and by pid ", ::getpid(),
                         ": is rankRoot given to two ranks, or do two jobs share ATB_OPS_JOB_ID?");
      reportConflict(live, why);
      ATB_FAIL(ERROR_INVALID_PARAM, what_, ": ", why);
    }
    MappedFile file = placeRecord(payload, kNoConflict, "");
    RecordHeader& h = headerOf(file);
    const auto deadline = Clock::now() + timeout_.value;
    int attempt = 0;
    while (h.readers.load(std::memory_order_acquire) < size_ - 1) {
      if (h.conflict.load(std::memory_order_acquire) == kConflictReported) {
        unlinkIfSame(file, path_);
        ATB_FAIL(ERROR_INVALID_PARAM, what_, ": ", std::string(h.reason, strnlen(h.reason, sizeof(h.reason))));
      }
      if (Clock::now() >= deadline) {
        std::vector<int64_t> missing;
        for (int32_t r = 0; r < size_; ++r) {
          if (flagsOf(file)[r] == 0) missing.push_back(r);
        }
        unlinkIfSame(file, path_);
        ATB_FAIL(ERROR_COMM_TIMEOUT, what_, ": root rank ", rank_, " published, but rank(s) ", formatRanks(missing),
                 " did not join within ", timeout_.describe(), elsewhere(), kOtherHosts);
      }
      noteStrangers(attempt);
      pause(attempt, what_);
    }
    unlinkIfSame(file, path_);
    return payload;
  }

  // Writes a whole record under a temporary name and renames it into place, so readers never see half of one.
  MappedFile placeRecord(const std::string& payload, int32_t conflict, const std::string& reason) {
    const pid_t self = ::getpid();
    const std::string tmp = dir_ + "/tmp." + randomToken();
    MappedFile file = MappedFile::create(tmp, sizeof(RecordHeader) + static_cast<size_t>(size_) + payload.size());
    RecordHeader& h = headerOf(file);
    h.keyHash = keyHash_;
    h.rankSize = size_;
    h.rootRank = root_;
    h.rootPid = self;
    h.payloadBytes = static_cast<int32_t>(payload.size());
    h.rootStartTime = processStartTime(self);
    std::strncpy(h.reason, reason.c_str(), sizeof(h.reason) - 1);
    h.conflict.store(conflict, std::memory_order_relaxed);
    h.failedAtTicks = conflict == kRootFailed ? ticksSinceBoot() : 0;
    std::strncpy(h.settings, settings_.c_str(), sizeof(h.settings) - 1);
    std::memcpy(payloadOf(file, size_), payload.data(), payload.size());
    flagsOf(file)[rank_] = 1;
    h.magic.store(kRendezvousMagic, std::memory_order_release);
    // Readers only ever see the whole record: it appears under its name at once.
    if (::rename(tmp.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      ATB_FAIL(ERROR_RT_FAIL, what_, ": cannot publish (", std::strerror(err), "); ", describePath(path_),
               " is at that name");
    }
    return file;
  }

 public:
  void fail(const std::string& why) override {
    if (rank_ != root_) return;
    try {
      MappedFile live;
      if (inspect(path_, keyHash_, &live) == Found::kLive) {
        if (headerOf(live).rootPid != ::getpid()) return;  // another root's record: not ours to replace
        unlinkIfSame(live, path_);
      }
      // Left in place for the ranks still to come; a retry of this root replaces it, its exit makes it stale.
      placeRecord("", kRootFailed, why);
    } catch (const c10::Error&) {
      // Nowhere to write even this: the other ranks time out naming the root.
    }
  }

 private:
  std::string fetch() {
    const auto deadline = Clock::now() + timeout_.value;
    int attempt = 0;
    while (true) {
      MappedFile live;
      const Found found = inspect(path_, keyHash_, &live);
      if (found == Found::kStale) failIfRootFailedDuringThisRun();
      // A record this rank already read belongs to a creation that is over for it (it failed later, or an earlier
      // process of this rank read it): the root's next record is the one to wait for.
      if (found == Found::kLive && !alreadyRead(live)) {
        const RecordHeader& h = headerOf(live);
        if (h.conflict.load(std::memory_order_acquire) == kRootFailed) {
          ATB_FAIL(ERROR_RT_FAIL, what_, ": root rank ", h.rootRank, " (pid ", h.rootPid,
                   ") could not create the communicator: ", std::string(h.reason, strnlen(h.reason, sizeof(h.reason))));
        }
        if (h.rankSize != size_ || h.rootRank != root_) {
          const std::string why =
              creationMismatch(domain_, h.rootRank, h.rootPid, h.rankSize, rank_, ::getpid(), size_, root_);
          reportConflict(live, why);
          ATB_FAIL(ERROR_INVALID_PARAM, what_, ": ", why);
        }
        if (std::string why = settingsMismatch(domain_, h.rootRank, h.rootPid,
                                               std::string(h.settings, strnlen(h.settings, sizeof(h.settings))), rank_,
                                               ::getpid(), settings_);
            !why.empty()) {
          reportConflict(live, why);
          ATB_FAIL(ERROR_INVALID_PARAM, what_, ": ", why);
        }
        std::string bytes(payloadOf(live, size_), static_cast<size_t>(h.payloadBytes));
        flagsOf(live)[rank_] = 1;
        headerOf(live).readers.fetch_add(1, std::memory_order_acq_rel);
        return bytes;
      }
      ATB_CHECK(Clock::now() < deadline, ERROR_COMM_TIMEOUT, what_, ": rank ", rank_, " waited ", timeout_.seconds(),
                " s (", timeout_.name(), ") for root rank ", root_, " to publish", elsewhere(), kOtherHosts);
      noteStrangers(attempt);
      pause(attempt, what_);
    }
  }

  bool alreadyRead(const MappedFile& record) const {
    return rank_ < headerOf(record).rankSize && flagsOf(record)[rank_] != 0;
  }

  // While waiting, about every second: ranks of the same commDomain that wait in another job (different parents,
  // job ids). Remembered, since they may give up before this rank does.
  void noteStrangers(int attempt) {
    if (!claim_ || attempt % 200 != 100) return;
    try {
      if (std::string others = claim_->strangers(); !others.empty()) strangers_ = std::move(others);
    } catch (const c10::Error&) {
      // Only a message would lack it.
    }
  }

  // For timeouts: what noteStrangers saw.
  std::string elsewhere() const { return strangers_.empty() ? "" : "; " + strangers_; }

  // A root that failed and exited before this rank arrived (a slow start) left a record that is stale by its
  // pid; written after this process started, it is this run's root's, and its reason is the answer. An older
  // run's failure (written before this process existed) is ignored: a new root is still to come.
  void failIfRootFailedDuringThisRun() const {
    const MappedFile f = MappedFile::open(path_);
    if (!f.valid() || f.size() < sizeof(RecordHeader)) return;
    const RecordHeader& h = headerOf(f);
    if (h.keyHash != keyHash_ || h.conflict.load(std::memory_order_acquire) != kRootFailed) return;
    const uint64_t started = processStartTime(::getpid());
    if (started == 0 || h.failedAtTicks < started) return;
    ATB_FAIL(ERROR_RT_FAIL, what_, ": root rank ", h.rootRank, " (pid ", h.rootPid,
             ", since exited) could not create the communicator: ",
             std::string(h.reason, strnlen(h.reason, sizeof(h.reason))));
  }

  // The others learn at once why this rank will not pair: a root leaves a failure record, any other rank tells
  // a root already waiting (the first reason stays).
  void tellPeers(const std::string& why) {
    MappedFile live;
    try {
      const bool found = inspect(path_, keyHash_, &live) == Found::kLive;
      // A root's own record is replaced by its failure below. Another root's is that of a second process claiming
      // the root's rank (two jobs): it may already be waiting for its readers, and must fail at once too.
      if (found && (rank_ != root_ || headerOf(live).rootPid != ::getpid())) {
        reportConflict(live, why);
        return;
      }
    } catch (const c10::Error&) {
      // Whatever sits at the name, this rank's own error says what matters.
      if (rank_ != root_) return;
    }
    if (rank_ == root_) fail(why);
  }

  // Tells the root (and any later rank) why this rendezvous cannot succeed; the first reason stays.
  static void reportConflict(const MappedFile& record, const std::string& why) {
    RecordHeader& h = headerOf(record);
    int32_t none = kNoConflict;
    if (!h.conflict.compare_exchange_strong(none, kConflictWriting, std::memory_order_acq_rel)) return;
    std::strncpy(h.reason, why.c_str(), sizeof(h.reason) - 1);
    h.conflict.store(kConflictReported, std::memory_order_release);
  }

  Options options_;
  std::string settings_;
  int32_t rank_;
  int32_t size_;
  int32_t root_;
  Timeout timeout_;
  uint64_t keyHash_;
  bool census_;
  CensusSlot censusSlot_;
  std::unique_ptr<JobCensus> claim_;
  std::string strangers_;
  std::string domain_;
  std::string dir_;
  std::string path_;
  std::string what_;
};

}  // namespace

int sweepStaleRecords(const Options& options) {
  const std::string dir = privateDir(options);
  const uint64_t now = ticksSinceBoot();
  const uint64_t keepFailures =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(options.timeout.value).count()) *
      ticksPerSecond();
  int removed = 0;
  for (const std::string& name : namesStartingWith(dir, "rdv.")) {
    const std::string path = dir + "/" + name;
    MappedFile f;
    try {
      f = MappedFile::open(path);
    } catch (const c10::Error&) {
      continue;  // not ours: reported when a rendezvous needs the name
    }
    if (!f.valid() || f.size() < sizeof(RecordHeader)) continue;
    const RecordHeader& h = headerOf(f);
    if (h.magic.load(std::memory_order_acquire) != kRendezvousMagic) continue;
    if (processAlive(h.rootPid) && processStartTime(h.rootPid) == h.rootStartTime) continue;
    // A dead root's failure stays a while for the ranks of its run still starting (failIfRootFailedDuringThisRun).
    const bool recentFailure =
        h.conflict.load(std::memory_order_acquire) == kRootFailed && h.failedAtTicks + keepFailures > now;
    if (recentFailure) continue;
    unlinkIfSame(f, path);
    ++removed;
  }
  return removed;
}

std::string rendezvousPath(const Options& options, const std::string& key) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv1a(key)));
  return privateDir(options) + "/rdv." + hex;
}

std::unique_ptr<Bootstrap> makeNodeLocalBootstrap(const CommConfig& config, const std::string& key,
                                                  const std::string& purpose, const std::string& settings) {
  return std::make_unique<NodeLocalBootstrap>(config, key, purpose, settings);
}

}  // namespace atb_ops
