#include "comm/nccl/nccl_bootstrap.h"

#include <unistd.h>

#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "comm/shm/rendezvous.h"
#include "core/status.h"

namespace atb_ops::nccl {
namespace {

using Clock = std::chrono::steady_clock;

std::mutex& hooksMutex() {
  static std::mutex m;
  return m;
}

std::optional<StoreHooks>& hooks() {
  static auto* h = new std::optional<StoreHooks>();  // outlives static teardown, like the comm cache
  return *h;
}

std::string jobKeyOf(const CommConfig& c) {
  return c.jobKey.empty() ? shm::defaultJobKey(c.commMode) : c.jobKey;
}

uint64_t nextGeneration(const std::string& jobKey, const CommConfig& c) {
  static std::mutex m;
  static std::map<std::tuple<std::string, std::string, int32_t, int32_t>, uint64_t> generations;
  std::lock_guard<std::mutex> lock(m);
  return generations[{jobKey, c.commDomain, c.rankSize, c.rank}]++;
}

std::string describeConfig(const CommConfig& c) {
  return "commDomain '" + c.commDomain + "', rankSize " + std::to_string(c.rankSize) + ", rankRoot " +
         std::to_string(c.rankRoot);
}

class FileIdExchange final : public UniqueIdExchange {
 public:
  FileIdExchange(const CommConfig& c, std::string jobKey, uint64_t generation)
      : root_(c.rankRoot),
        isRoot_(c.rank == c.rankRoot),
        what_(describeConfig(c) + ", job '" + jobKey + "', generation " + std::to_string(generation) +
              ", node-local file") {
    path_ = shm::rendezvousPath(shm::fnv1a("nccl|" + jobKey + "|" + c.commDomain + "|" + std::to_string(c.rankSize) +
                                           "|" + std::to_string(c.rankRoot) + "|" + std::to_string(generation)));
  }

  ~FileIdExchange() override { withdraw(); }

  void publish(const UniqueId& id) override {
    ATB_CHECK(isRoot_, ERROR_INTERNAL_ERROR, "nccl rendezvous: only rankRoot publishes (", what_, ")");
    hex_ = toHex(id);
    const pid_t self = ::getpid();
    shm::publishRendezvous(path_, shm::RendezvousRecord{hex_, self, processStartTime(self)});
    published_ = true;
  }

  UniqueId fetch(std::chrono::milliseconds timeout) override {
    const auto deadline = Clock::now() + timeout;
    int attempt = 0;
    while (true) {
      UniqueId id;
      // A record from a crashed run names a dead root and is skipped by readLiveRendezvous.
      if (auto record = shm::readLiveRendezvous(path_); record && fromHex(record->segmentName, id)) return id;
      ATB_CHECK(Clock::now() < deadline, ERROR_COMM_TIMEOUT, "nccl rendezvous: root rank ", root_,
                " did not publish the NCCL unique id (", what_, " ", path_,
                ") within ATB_OPS_TIMEOUT=", std::chrono::duration<double>(timeout).count(), " s");
      std::this_thread::sleep_for(std::chrono::microseconds(attempt++ < 50 ? 200 : 2000));
    }
  }

  // Every rank read the id before it could join, so the file has done its work.
  void finished() override { withdraw(); }

  std::string describe() const override { return what_; }

 private:
  void withdraw() {
    if (!published_) return;
    published_ = false;
    if (auto record = shm::readLiveRendezvous(path_); record && record->segmentName == hex_) ::unlink(path_.c_str());
  }

  int32_t root_;
  bool isRoot_;
  std::string what_;
  std::string path_;
  std::string hex_;
  bool published_ = false;
};

class StoreIdExchange final : public UniqueIdExchange {
 public:
  StoreIdExchange(const CommConfig& c, StoreHooks hooks, uint64_t generation)
      : hooks_(std::move(hooks)),
        root_(c.rankRoot),
        key_("atb_ops/nccl/" + c.commDomain + "/" + std::to_string(c.rankSize) + "/" + std::to_string(c.rankRoot) +
             "/" + std::to_string(generation)),
        what_(describeConfig(c) + ", torch.distributed store key '" + key_ + "'") {}

  void publish(const UniqueId& id) override {
    try {
      hooks_.set(key_, toHex(id));
    } catch (const std::exception& e) {
      ATB_FAIL(ERROR_COMM_EMPTY, "nccl rendezvous: root rank ", root_, " could not publish the NCCL unique id (", what_,
               "): ", e.what());
    }
  }

  UniqueId fetch(std::chrono::milliseconds timeout) override {
    const double seconds = std::chrono::duration<double>(timeout).count();
    std::string hex;
    try {
      hex = hooks_.get(key_, seconds);
    } catch (const std::exception& e) {
      ATB_FAIL(ERROR_COMM_TIMEOUT, "nccl rendezvous: root rank ", root_, " did not publish the NCCL unique id (", what_,
               ") within ATB_OPS_TIMEOUT=", seconds, " s: ", e.what());
    }
    UniqueId id;
    ATB_CHECK(fromHex(hex, id), ERROR_COMM_EMPTY, "nccl rendezvous: store key '", key_, "' holds ", hex.size(),
              " characters, not a ", 2 * kUniqueIdBytes, "-digit hex NCCL unique id");
    return id;
  }

  std::string describe() const override { return what_; }

 private:
  StoreHooks hooks_;
  int32_t root_;
  std::string key_;
  std::string what_;
};

}  // namespace

void setStoreHooks(std::optional<StoreHooks> h) {
  std::lock_guard<std::mutex> lock(hooksMutex());
  hooks() = std::move(h);
}

std::unique_ptr<UniqueIdExchange> makeFileIdExchange(const CommConfig& c) {
  const std::string jobKey = jobKeyOf(c);
  return std::make_unique<FileIdExchange>(c, jobKey, nextGeneration(jobKey, c));
}

std::unique_ptr<UniqueIdExchange> makeIdExchange(const CommConfig& c) {
  std::optional<StoreHooks> h;
  {
    std::lock_guard<std::mutex> lock(hooksMutex());
    h = hooks();
  }
  if (h && h->available && h->available()) {
    const std::string jobKey = jobKeyOf(c);
    return std::make_unique<StoreIdExchange>(c, std::move(*h), nextGeneration(jobKey, c));
  }
  return makeFileIdExchange(c);
}

}  // namespace atb_ops::nccl
