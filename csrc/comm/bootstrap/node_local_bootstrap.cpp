#include "comm/bootstrap/node_local_bootstrap.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "comm/bootstrap/job_scope.h"
#include "comm/bootstrap/private_dir.h"
#include "core/layout.h"
#include "core/process.h"
#include "core/status.h"

namespace atb_ops {
namespace {

using Clock = std::chrono::steady_clock;

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
  int32_t reserved;
};
static_assert(sizeof(RecordHeader) == 48 && offsetof(RecordHeader, rootPid) == 24 &&
                  offsetof(RecordHeader, rootStartTime) == 32,
              "op_plugin/python/module.cpp (node_files) publishes this layout for doctor");

constexpr int32_t kMaxPayload = 1 << 20;

uint8_t* flagsOf(const MappedFile& f) {
  return static_cast<uint8_t*>(f.base()) + sizeof(RecordHeader);
}

char* payloadOf(const MappedFile& f, int32_t rankSize) {
  return reinterpret_cast<char*>(flagsOf(f) + rankSize);
}

RecordHeader& headerOf(const MappedFile& f) {
  return *static_cast<RecordHeader*>(f.base());
}

void pause(int& attempt) {
  std::this_thread::sleep_for(std::chrono::microseconds(attempt < 50 ? 200 : 2000));
  ++attempt;
}

enum class Found { kNothing, kStale, kLive };

// What is at the record's name. A record of a dead root (a crashed run) is stale; anything that is not a
// record of this key raises at once, on every rank, naming the path.
Found inspect(const std::string& path, uint64_t keyHash, int32_t rankSize, MappedFile* live) {
  MappedFile f = MappedFile::open(path);  // raises for directories, links, FIFOs, other owners, modes
  if (!f.valid()) return Found::kNothing;
  ATB_CHECK(f.size() >= sizeof(RecordHeader) && headerOf(f).magic.load(std::memory_order_acquire) == kRendezvousMagic,
            ERROR_RT_FAIL, "rendezvous file '", path, "' holds ", f.size(),
            " bytes that are not an atb_ops rendezvous record; remove it");
  const RecordHeader& h = headerOf(f);
  const bool alive = processAlive(h.rootPid) && processStartTime(h.rootPid) == h.rootStartTime;
  if (!alive) return Found::kStale;
  ATB_CHECK(h.keyHash == keyHash && h.rankSize == rankSize &&
                f.size() >= sizeof(RecordHeader) + static_cast<size_t>(rankSize) + static_cast<size_t>(h.payloadBytes),
            ERROR_RT_FAIL, "rendezvous file '", path, "' belongs to another communicator (rankSize ", h.rankSize,
            ", root pid ", h.rootPid, ", which is alive); two jobs hash to one name: set ATB_OPS_JOB_ID");
  if (live != nullptr) *live = std::move(f);
  return Found::kLive;
}

class NodeLocalBootstrap final : public Bootstrap {
 public:
  NodeLocalBootstrap(const CommConfig& c, const std::string& key)
      : rank_(c.rank),
        size_(c.rankSize),
        root_(c.rankRoot),
        timeout_(c.options.timeout),
        keyHash_(fnv1a(key)),
        dir_(privateDir(c.options)),
        path_(rendezvousPath(c.options, key)),
        what_("node-local rendezvous '" + path_ + "' (commDomain '" + c.commDomain + "', rankSize " +
              std::to_string(c.rankSize) + ", job '" + jobKeyFor(c) + "')") {}

  std::string describe() const override { return what_; }

  std::string broadcast(const std::string& payload) override { return rank_ == root_ ? publish(payload) : fetch(); }

 private:
  double seconds() const { return std::chrono::duration<double>(timeout_).count(); }

  std::string publish(const std::string& payload) {
    ATB_CHECK(payload.size() <= static_cast<size_t>(kMaxPayload), ERROR_INTERNAL_ERROR, "bootstrap payload of ",
              payload.size(), " bytes is too large");
    MappedFile live;
    const Found found = inspect(path_, keyHash_, size_, &live);
    ATB_CHECK(found != Found::kLive, ERROR_RT_FAIL, what_, ": rank ", rank_, " is rankRoot, but the live process ",
              headerOf(live).rootPid, " already published this rendezvous; is rankRoot ", root_,
              " given to two ranks, or two jobs sharing ATB_OPS_JOB_ID?");
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
    const auto deadline = Clock::now() + timeout_;
    int attempt = 0;
    while (h.readers.load(std::memory_order_acquire) < size_ - 1) {
      if (Clock::now() >= deadline) {
        std::vector<int64_t> missing;
        for (int32_t r = 0; r < size_; ++r) {
          if (flagsOf(file)[r] == 0) missing.push_back(r);
        }
        unlinkIfSame(file, path_);
        ATB_FAIL(ERROR_COMM_TIMEOUT, what_, ": root rank ", rank_, " published, but rank(s) ", formatRanks(missing),
                 " did not join within ATB_OPS_TIMEOUT=", seconds(), " s");
      }
      pause(attempt);
    }
    unlinkIfSame(file, path_);
    return payload;
  }

  std::string fetch() {
    const auto deadline = Clock::now() + timeout_;
    int attempt = 0;
    while (true) {
      MappedFile live;
      if (inspect(path_, keyHash_, size_, &live) == Found::kLive) {
        const RecordHeader& h = headerOf(live);
        std::string bytes(payloadOf(live, size_), static_cast<size_t>(h.payloadBytes));
        flagsOf(live)[rank_] = 1;
        headerOf(live).readers.fetch_add(1, std::memory_order_acq_rel);
        return bytes;
      }
      ATB_CHECK(Clock::now() < deadline, ERROR_COMM_TIMEOUT, what_, ": rank ", rank_, " waited ", seconds(),
                " s (ATB_OPS_TIMEOUT) for root rank ", root_,
                " to publish; ranks on other hosts need torch.distributed initialised");
      pause(attempt);
    }
  }

  int32_t rank_;
  int32_t size_;
  int32_t root_;
  std::chrono::milliseconds timeout_;
  uint64_t keyHash_;
  std::string dir_;
  std::string path_;
  std::string what_;
};

}  // namespace

std::string rendezvousPath(const Options& options, const std::string& key) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv1a(key)));
  return privateDir(options) + "/rdv." + hex;
}

std::unique_ptr<Bootstrap> makeNodeLocalBootstrap(const CommConfig& config, const std::string& key) {
  return std::make_unique<NodeLocalBootstrap>(config, key);
}

}  // namespace atb_ops
