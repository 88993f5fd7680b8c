#include "comm/bootstrap/job_census.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "comm/bootstrap/job_scope.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "core/status.h"

namespace atb_ops {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kClaimMagic = 0x31306d6c63627461ULL;    // "atbclm01"
constexpr uint64_t kVerdictMagic = 0x3130626d61627461ULL;  // "atbamb01"
// A sibling of the parent that has claimed nothing may still be importing atb_ops this long after it started
// (Python and torch import in 2-5 s on a busy 2-core host); once it has atb_ops loaded it may create a
// communicator at any time (a model loaded first), so then its age no longer matters.
constexpr uint64_t kSettleSeconds = 10;
constexpr int kVerdictPids = 16;

struct ClaimRecord {
  std::atomic<uint64_t> magic;  // written last
  int32_t pid;
  int32_t rank;
  uint64_t startTime;
  int32_t parentPid;
  int32_t rankSize;
  uint64_t parentStart;
  uint64_t scopeHash;
  uint64_t looseHash;
  char jobKey[96];
  std::atomic<int32_t> creating;  // 0 once its creation ended (a kept claim)
  std::atomic<int32_t> live;      // communicators of this process made with it that still live
};

// "Two jobs meet here": written by the first claimant that saw it, read by every later one while any of the
// processes it names lives.
struct VerdictRecord {
  std::atomic<uint64_t> magic;
  int32_t count;
  int32_t reserved;
  int32_t pids[kVerdictPids];
  uint64_t starts[kVerdictPids];
  char reason[640];
};

struct Claim {
  pid_t pid;
  int32_t rank;
  int32_t rankSize;
  pid_t parentPid;
  uint64_t startTime;
  uint64_t scopeHash;
  uint64_t looseHash;
  std::string jobKey;
  bool creating;
  bool live;
};

ClaimRecord& recordOf(const MappedFile& file) {
  return *static_cast<ClaimRecord*>(file.base());
}

// Parent-scoped claims outlive their creation (job_census.h): kept here until the process exits normally, and
// removed by the next census that finds their process gone otherwise (multiprocessing's children _exit).
class KeptClaims {
 public:
  ~KeptClaims() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [path, kept] : files_) {
      if (kept.owner == ::getpid()) unlinkIfSame(*kept.file, path);  // never a parent's, copied by fork
    }
  }
  void keep(const std::shared_ptr<MappedFile>& file) {
    std::lock_guard<std::mutex> lock(mutex_);
    files_[file->path()] = Kept{::getpid(), file};
  }
  // This process's kept claim at `path`, or null.
  std::shared_ptr<MappedFile> find(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = files_.find(path);
    return it != files_.end() && it->second.owner == ::getpid() ? it->second.file : nullptr;
  }

 private:
  struct Kept {
    pid_t owner;
    std::shared_ptr<MappedFile> file;
  };
  std::mutex mutex_;
  std::map<std::string, Kept> files_;
};

// A communicator's hold on the claim its rendezvous made: the claim is live while one is held.
class LiveClaim {
 public:
  explicit LiveClaim(std::shared_ptr<MappedFile> file) : file_(std::move(file)), owner_(::getpid()) {
    recordOf(*file_).live.fetch_add(1, std::memory_order_acq_rel);
  }
  ~LiveClaim() {
    if (::getpid() == owner_) recordOf(*file_).live.fetch_sub(1, std::memory_order_acq_rel);
  }
  LiveClaim(const LiveClaim&) = delete;
  LiveClaim& operator=(const LiveClaim&) = delete;

 private:
  std::shared_ptr<MappedFile> file_;
  pid_t owner_;
};

// The holds of the communicators this thread is making, innermost last (MembershipHolds).
std::vector<std::vector<std::shared_ptr<void>>>& holdStack() {
  thread_local std::vector<std::vector<std::shared_ptr<void>>> stack;
  return stack;
}

// Holds made outside any communicator's creation: kept for the process's life.
std::vector<std::shared_ptr<void>>& unownedHolds() {
  static auto* holds = new std::vector<std::shared_ptr<void>>();
  return *holds;
}

KeptClaims& keptClaims() {
  static KeptClaims kept;
  return kept;
}

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool sameProcess(pid_t pid, uint64_t start) {
  return processAlive(pid) && processStartTime(pid) == start;
}

// Every live claim in the folder; claims of processes that are gone are removed on the way.
std::vector<Claim> liveClaims(const std::string& dir) {
  std::vector<Claim> claims;
  for (const std::string& name : namesStartingWith(dir, "clm.")) {
    const std::string path = dir + "/" + name;
    MappedFile f;
    try {
      f = MappedFile::open(path);
    } catch (const c10::Error&) {
      continue;  // not a file of ours: never read, never removed
    }
    if (!f.valid() || f.size() < sizeof(ClaimRecord)) continue;
    const auto& r = *static_cast<const ClaimRecord*>(f.base());
    if (r.magic.load(std::memory_order_acquire) != kClaimMagic) continue;  // still being written
    if (!sameProcess(r.pid, r.startTime)) {
      unlinkIfSame(f, path);
      continue;
    }
    claims.push_back(Claim{r.pid, r.rank, r.rankSize, r.parentPid, r.startTime, r.scopeHash, r.looseHash,
                           std::string(r.jobKey, strnlen(r.jobKey, sizeof(r.jobKey))),
                           r.creating.load(std::memory_order_acquire) != 0,
                           r.live.load(std::memory_order_acquire) > 0});
  }
  return claims;
}

// The claimants of each rank of a scope's communicators of one size that are being made or live (a claim kept
// after its communicator went only shows that its process took part; a kept claim of a 4-rank communicator says
// nothing about who is rank 0 of a 2-rank one: ranks that disagree on the size are named when they pair).
std::map<int32_t, std::vector<const Claim*>> claimsByRank(const std::vector<Claim>& claims, uint64_t scopeHash,
                                                          int32_t rankSize) {
  std::map<int32_t, std::vector<const Claim*>> byRank;
  for (const Claim& c : claims) {
    if (c.scopeHash == scopeHash && c.rankSize == rankSize && (c.creating || c.live)) byRank[c.rank].push_back(&c);
  }
  return byRank;
}

// The ranks with several claimants, and their pids; `atOnce`: only those where two are making their communicator
// now (two jobs, for sure), not one making it while another process's communicator of that rank still lives.
std::map<int32_t, std::vector<pid_t>> duplicates(const std::map<int32_t, std::vector<const Claim*>>& byRank,
                                                 bool atOnce) {
  std::map<int32_t, std::vector<pid_t>> found;
  for (const auto& [rank, claimants] : byRank) {
    const auto creating = std::count_if(claimants.begin(), claimants.end(), [](const Claim* c) { return c->creating; });
    if (claimants.size() < 2 || (atOnce && creating < 2)) continue;
    for (const Claim* c : claimants) found[rank].push_back(c->pid);
  }
  return found;
}

std::string verdictPath(const std::string& dir, uint64_t scopeHash) {
  return dir + "/amb." + hex16(scopeHash);
}

// The reason of a verdict whose processes still live; empty when there is none (a stale one is removed).
std::string liveVerdict(const std::string& path) {
  MappedFile f;
  try {
    f = MappedFile::open(path);
  } catch (const c10::Error&) {
    return "";
  }
  if (!f.valid() || f.size() < sizeof(VerdictRecord)) return "";
  const auto& v = *static_cast<const VerdictRecord*>(f.base());
  if (v.magic.load(std::memory_order_acquire) != kVerdictMagic) return "";
  for (int i = 0; i < std::min(v.count, kVerdictPids); ++i) {
    if (sameProcess(v.pids[i], v.starts[i])) return std::string(v.reason, strnlen(v.reason, sizeof(v.reason)));
  }
  unlinkIfSame(f, path);
  return "";
}

}  // namespace

CensusFileFormat censusFileFormat() {
  return CensusFileFormat{kClaimMagic,
                          offsetof(ClaimRecord, pid),
                          offsetof(ClaimRecord, startTime),
                          kVerdictMagic,
                          offsetof(VerdictRecord, count),
                          offsetof(VerdictRecord, pids),
                          offsetof(VerdictRecord, starts),
                          kVerdictPids};
}

namespace {

std::shared_ptr<MappedFile> writeClaim(const std::string& dir, const CensusSlot& slot, uint64_t scopeHash,
                                       uint64_t looseHash) {
  const pid_t self = ::getpid();
  const std::string path = dir + "/clm." + std::to_string(self) + "." + std::to_string(slot.rank) + "." +
                           std::to_string(slot.rankSize) + "." + hex16(scopeHash);
  if (std::shared_ptr<MappedFile> kept = keptClaims().find(path)) {
    recordOf(*kept).creating.store(1, std::memory_order_release);  // this process's, kept: claimed again
    return kept;
  }
  // A claim of a dead process that had this pid, or this process's own of an earlier creation that was cut short.
  ::unlink(path.c_str());
  auto claim = std::make_shared<MappedFile>(MappedFile::create(path, sizeof(ClaimRecord)));
  auto& r = recordOf(*claim);
  r.pid = self;
  r.rank = slot.rank;
  r.startTime = processStartTime(self);
  r.parentPid = ::getppid();
  r.rankSize = slot.rankSize;
  r.parentStart = processStartTime(r.parentPid);
  r.scopeHash = scopeHash;
  r.looseHash = looseHash;
  std::strncpy(r.jobKey, slot.jobKey.c_str(), sizeof(r.jobKey) - 1);
  r.creating.store(1, std::memory_order_relaxed);
  r.live.store(0, std::memory_order_relaxed);
  r.magic.store(kClaimMagic, std::memory_order_release);
  return claim;
}

}  // namespace

JobCensus::JobCensus(const Options& options, CensusSlot slot)
    : options_(options),
      slot_(std::move(slot)),
      scopeHash_(fnv1a(slot_.scope)),
      looseHash_(fnv1a(slot_.loose)),
      parentScoped_(parentScoped(slot_.jobKey)),
      dir_(privateDir(options)),
      claim_(writeClaim(dir_, slot_, scopeHash_, looseHash_)) {}

JobCensus::~JobCensus() {
  if (parentScoped_) {
    recordOf(*claim_).creating.store(0, std::memory_order_release);
    keptClaims().keep(claim_);
  } else {
    unlinkIfSame(*claim_, claim_->path());
  }
}

void JobCensus::holdWhileCommunicatorLives() {
  if (!parentScoped_) return;  // a proven job's claims are withdrawn when the creation ends
  auto hold = std::make_shared<LiveClaim>(claim_);
  if (holdStack().empty()) {
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    unownedHolds().push_back(std::move(hold));
  } else {
    holdStack().back().push_back(std::move(hold));
  }
}

void JobCensus::declareNoRank(const Options& options) {
  const CensusSlot none{"", "", "no rank", "", -1, 0};
  std::shared_ptr<MappedFile> claim = writeClaim(privateDir(options), none, fnv1a(none.scope), fnv1a(none.loose));
  recordOf(*claim).creating.store(0, std::memory_order_release);
  keptClaims().keep(claim);
}

MembershipHolds::MembershipHolds() {
  holdStack().emplace_back();
}

MembershipHolds::~MembershipHolds() {
  holdStack().pop_back();
}

std::vector<std::shared_ptr<void>> MembershipHolds::take() {
  return std::move(holdStack().back());
}

std::string JobCensus::describe() const {
  return "commDomain '" + slot_.domain + "' (rankSize " + std::to_string(slot_.rankSize) + ", job '" + slot_.jobKey +
         "')";
}

void JobCensus::checkVerdict() const {
  const std::string why = liveVerdict(verdictPath(dir_, scopeHash_));
  ATB_CHECK(why.empty(), ERROR_INVALID_PARAM, describe(), ": ", why);
}

void JobCensus::refuse(const std::string& why, Tell tell) {
  if (tell != Tell::kNobody) {
    // Every claimant of this scope, now and until they are all gone, fails with this same reason.
    try {
      const std::string tmp = dir_ + "/tmp." + randomToken();
      MappedFile f = MappedFile::create(tmp, sizeof(VerdictRecord));
      auto& v = *static_cast<VerdictRecord*>(f.base());
      int n = 0;
      for (const Claim& c : liveClaims(dir_)) {
        if (c.scopeHash == scopeHash_ && n < kVerdictPids - 1) {
          v.pids[n] = c.pid;
          v.starts[n] = c.startTime;
          ++n;
        }
      }
      if (parentScoped_ && tell == Tell::kClaimantsAndLaterRanks) {
        // The scope is the parent's: the verdict holds while it lives, so a rank of either job that starts late
        // (after the others failed and exited) is told too, instead of waiting alone for a partner.
        v.pids[n] = ::getppid();
        v.starts[n] = processStartTime(v.pids[n]);
        ++n;
      }
      v.count = n;
      std::strncpy(v.reason, why.c_str(), sizeof(v.reason) - 1);
      v.magic.store(kVerdictMagic, std::memory_order_release);
      if (::rename(tmp.c_str(), verdictPath(dir_, scopeHash_).c_str()) != 0) ::unlink(tmp.c_str());
    } catch (const c10::Error&) {
      // The others still find the duplicate themselves while the claims stand.
    }
  }
  ATB_FAIL(ERROR_INVALID_PARAM, describe(), ": ", why);
}

void JobCensus::refuseDuplicates(std::map<int32_t, std::vector<pid_t>> byRank, const char* when) {
  for (auto& [rank, pids] : byRank) {
    if (pids.size() < 2) continue;
    std::sort(pids.begin(), pids.end());
    refuse(c10::str("cannot tell which processes form this job: two processes claim rank ", rank,
                    " of this communicator", when, " (pids ", c10::Join(", ", pids),
                    "), so two jobs meet here and none of them may pair; set ATB_OPS_JOB_ID to a value of its own in "
                    "each job's environment (or initialise torch.distributed, or pass each job its own rank table "
                    "or commDomain)"),
           Tell::kClaimantsAndLaterRanks);
  }
}

void JobCensus::awaitUnambiguous(Clock::time_point deadline) {
  const pid_t parent = ::getppid();
  int attempt = 0;
  while (true) {
    checkVerdict();
    const std::vector<Claim> claims = liveClaims(dir_);
    const std::map<int32_t, std::vector<const Claim*>> byRank = claimsByRank(claims, scopeHash_, slot_.rankSize);
    refuseDuplicates(duplicates(byRank, true), "");
    if (!parentScoped_) return;  // its claims are withdrawn when a creation ends: none is merely live
    // A rank also held by a live communicator of another process: two jobs, or one job renumbering its ranks
    // whose old communicator goes in a moment. Wait for it to go; refuse only if it never does.
    const bool heldElsewhere = !duplicates(byRank, false).empty();
    // Siblings that may still claim a rank here: those that have claimed nothing yet and run this rank's program
    // (they may import atb_ops only right before creating), have atb_ops loaded, or are young enough to be
    // loading it.
    std::set<pid_t> claimed;
    for (const Claim& c : claims) claimed.insert(c.pid);
    const uint64_t now = ticksSinceBoot();
    const uint64_t settle = kSettleSeconds * ticksPerSecond();
    std::vector<int64_t> undeclared;
    for (const Sibling& s : unscopedSiblings()) {
      if (claimed.count(s.pid) != 0) continue;
      if (s.runsThisProgram || s.startTime + settle > now || withAtbOps(s)) undeclared.push_back(s.pid);
    }
    const size_t mine = byRank.size();
    if (!heldElsewhere && mine + undeclared.size() <= static_cast<size_t>(slot_.rankSize)) return;
    if (Clock::now() >= deadline) {
      refuseDuplicates(duplicates(byRank, false), " (one of them still holds a communicator of that rank)");
      std::sort(undeclared.begin(), undeclared.end());
      refuse(c10::str("cannot tell which processes form this job: parent process ", parent, " runs ", mine,
                      " process(es) claiming ranks of this communicator and ", undeclared.size(),
                      " more that have claimed nothing yet and run its program, have atb_ops loaded or are still "
                      "starting (pids ",
                      c10::Join(", ", undeclared), "), more than its rankSize ", slot_.rankSize,
                      ", so two jobs may have been started at once; set ATB_OPS_JOB_ID to a value of its own in "
                      "each job's environment (or MASTER_ADDR/MASTER_PORT, or initialise torch.distributed)"),
             // The other claimants fail with it at once: once this rank has gone, they would count one process
             // fewer, pair with nobody and time out. Not later ranks: a fresh try may find the job unambiguous.
             Tell::kClaimants);
    }
    throwIfInterrupted("the job census of a node-local rendezvous");
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt++ < 20 ? 5 : 25));
  }
}

bool JobCensus::withAtbOps(const Sibling& sibling) {
  const auto id = std::make_pair(sibling.pid, sibling.startTime);
  if (loaded_.count(id) != 0) return true;  // a library stays loaded: its map is read once it shows
  if (!loadsAtbOps(sibling.pid)) return false;
  loaded_.insert(id);
  return true;
}

void JobCensus::recheck() {
  checkVerdict();
  const std::vector<Claim> claims = liveClaims(dir_);
  refuseDuplicates(duplicates(claimsByRank(claims, scopeHash_, slot_.rankSize), true),
                   " (the second arrived while it was being made)");
}

std::string JobCensus::strangers() const {
  std::vector<std::string> seen;
  for (const Claim& c : liveClaims(dir_)) {
    if (c.looseHash != looseHash_ || c.scopeHash == scopeHash_ || !c.creating) continue;
    seen.push_back(
        c10::str("rank ", c.rank, " (pid ", c.pid, ", parent process ", c.parentPid, ", job '", c.jobKey, "')"));
  }
  if (seen.empty()) return "";
  return c10::str(
      c10::Join(", ", seen), " wait(s) for this commDomain in another job (this rank: parent process ", ::getppid(),
      ", job '", slot_.jobKey,
      "'); ranks form one job only when they share its scope: ATB_OPS_JOB_ID (each `python -m atb_ops "
      "run` gives its own unless one is set), a launcher's job (torchrun, mpirun, srun), torch.distributed, "
      "a rank table or HCCL root info; without any, their parent process");
}

int JobCensus::sweepStale(const Options& options) {
  const std::string dir = privateDir(options);
  int removed = 0;
  const auto before = namesStartingWith(dir, "clm.").size();
  const auto after = liveClaims(dir).size();
  removed += static_cast<int>(before - std::min(before, after));
  for (const std::string& name : namesStartingWith(dir, "amb.")) {
    const std::string path = dir + "/" + name;
    if (liveVerdict(path).empty() && ::access(path.c_str(), F_OK) != 0) ++removed;
  }
  return removed;
}

}  // namespace atb_ops
