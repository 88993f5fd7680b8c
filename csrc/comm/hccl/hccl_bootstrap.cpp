#include "comm/hccl/hccl_bootstrap.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "comm/shm/rendezvous.h"
#include "comm/shm/shm_segment.h"
#include "core/env.h"
#include "core/status.h"

namespace atb_ops::hccl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kBlockMagic = 0x31746f6f72636368ULL;  // "hccroot1"

// What the root places in a fresh shared segment: the bytes, and a count of ranks that copied them so
// the root knows when the names can go.
struct RootInfoBlock {
  std::atomic<uint64_t> magic;  // written last by the root: a reader that sees it sees the rest
  uint64_t keyHash;
  int32_t rankSize;
  std::atomic<int32_t> readers;
  char info[kRootInfoBytes];
};

std::mutex& hookMutex() {
  static std::mutex m;
  return m;
}

StoreHook& hook() {
  static StoreHook h;
  return h;
}

std::string describe(const CommConfig& c) {
  return "commDomain '" + c.commDomain + "', rankSize " + std::to_string(c.rankSize) + ", rankRoot " +
         std::to_string(c.rankRoot);
}

double seconds(std::chrono::milliseconds d) {
  return std::chrono::duration<double>(d).count();
}

void pause(int& attempt) {
  std::this_thread::sleep_for(std::chrono::microseconds(attempt < 50 ? 200 : 2000));
  ++attempt;
}

// Store keys outlive a communicator, so each rank numbers its creations per key: ranks create their
// communicators in the same order, and the n-th creation of one reads the n-th root info, not a stale one.
uint64_t nextGeneration(const std::string& key, int32_t rank) {
  static std::mutex m;
  static std::map<std::pair<std::string, int32_t>, uint64_t> generations;
  std::lock_guard<std::mutex> lock(m);
  return generations[{key, rank}]++;
}

RootInfo viaStore(const StoreHook& store, const CommConfig& c, const std::function<RootInfo()>& makeAtRoot) {
  const std::string base =
      "atb_ops/hccl/root_info/" + c.commDomain + "/" + std::to_string(c.rankSize) + "/" + std::to_string(c.rankRoot);
  const std::string key = base + "/" + std::to_string(nextGeneration(base, c.rank));
  if (c.rank == c.rankRoot) {
    const RootInfo info = makeAtRoot();
    store.set(key, std::string(info.data(), info.size()));
    return info;
  }
  const auto timeout = peerTimeout();
  std::string bytes;
  try {
    bytes = store.get(key, timeout);
  } catch (const c10::Error& e) {
    ATB_FAIL(ERROR_COMM_TIMEOUT, "hccl: rank ", c.rank, " waited ", seconds(timeout),
             " s (ATB_OPS_TIMEOUT) for root rank ", c.rankRoot, "'s root info under store key '", key, "' (",
             describe(c), "): ", e.what_without_backtrace());
  }
  ATB_CHECK(bytes.size() == kRootInfoBytes, ERROR_HCCL_FAIL, "hccl: store key '", key, "' holds ", bytes.size(),
            " bytes; root info is ", kRootInfoBytes, " bytes (", describe(c), ")");
  RootInfo info;
  std::memcpy(info.data(), bytes.data(), kRootInfoBytes);
  return info;
}

RootInfo viaNodeLocal(const CommConfig& c, const std::function<RootInfo()>& makeAtRoot) {
  const std::string jobKey = c.jobKey.empty() ? shm::defaultJobKey(c.commMode) : c.jobKey;
  const uint64_t keyHash = shm::fnv1a("hccl-root-info|" + jobKey + "|" + c.commDomain + "|" +
                                      std::to_string(c.rankSize) + "|" + std::to_string(c.rankRoot));
  const std::string rdvPath = shm::rendezvousPath(keyHash);
  const auto timeout = peerTimeout();
  const auto deadline = Clock::now() + timeout;
  int attempt = 0;

  if (c.rank == c.rankRoot) {
    const RootInfo info = makeAtRoot();
    shm::MappedSegment segment =
        shm::MappedSegment::create(shm::userPrefix() + shm::randomToken(), sizeof(RootInfoBlock));
    auto& block = *static_cast<RootInfoBlock*>(segment.base());
    block.keyHash = keyHash;
    block.rankSize = c.rankSize;
    std::memcpy(block.info, info.data(), kRootInfoBytes);
    block.magic.store(kBlockMagic, std::memory_order_release);
    const pid_t self = ::getpid();
    shm::publishRendezvous(rdvPath, shm::RendezvousRecord{segment.name(), self, processStartTime(self)});
    // The names go once every rank holds the bytes (or on timeout), so nothing outlives this call.
    auto removeNames = [&] {
      if (auto record = shm::readLiveRendezvous(rdvPath); record && record->segmentName == segment.name()) {
        ::unlink(rdvPath.c_str());
      }
      shm::unlinkSegment(segment.name());
    };
    while (block.readers.load() < c.rankSize - 1) {
      if (Clock::now() >= deadline) {
        const int32_t got = block.readers.load();
        removeNames();
        ATB_FAIL(ERROR_COMM_TIMEOUT, "hccl: root rank ", c.rank, " published its root info but only ", got, " of ",
                 c.rankSize - 1, " other ranks read it within ATB_OPS_TIMEOUT=", seconds(timeout), " s (", describe(c),
                 ", job '", jobKey, "')");
      }
      pause(attempt);
    }
    removeNames();
    return info;
  }

  while (true) {
    if (auto record = shm::readLiveRendezvous(rdvPath)) {
      shm::MappedSegment segment = shm::MappedSegment::open(record->segmentName);
      if (segment.valid() && segment.size() == sizeof(RootInfoBlock)) {
        auto& block = *static_cast<RootInfoBlock*>(segment.base());
        if (block.magic.load(std::memory_order_acquire) == kBlockMagic && block.keyHash == keyHash &&
            block.rankSize == c.rankSize) {
          RootInfo info;
          std::memcpy(info.data(), block.info, kRootInfoBytes);
          block.readers.fetch_add(1);
          return info;
        }
      }
    }
    ATB_CHECK(Clock::now() < deadline, ERROR_COMM_TIMEOUT, "hccl: rank ", c.rank, " waited ", seconds(timeout),
              " s (ATB_OPS_TIMEOUT) for root rank ", c.rankRoot, " to publish its root info on this node (",
              describe(c), ", job '", jobKey,
              "'); ranks on other hosts need torch.distributed initialised or a rankTableFile");
    pause(attempt);
  }
}

}  // namespace

void setStoreHook(StoreHook h) {
  std::lock_guard<std::mutex> lock(hookMutex());
  hook() = std::move(h);
}

const char* channelName(ExchangeChannel c) {
  return c == ExchangeChannel::kStore ? "torch.distributed store" : "node-local rendezvous";
}

RootInfo exchangeRootInfo(const CommConfig& config, const std::function<RootInfo()>& makeAtRoot,
                          ExchangeChannel* used) {
  StoreHook store;
  {
    std::lock_guard<std::mutex> lock(hookMutex());
    store = hook();
  }
  const bool useStore = store.available && store.set && store.get && store.available();
  if (used != nullptr) *used = useStore ? ExchangeChannel::kStore : ExchangeChannel::kNodeLocal;
  return useStore ? viaStore(store, config, makeAtRoot) : viaNodeLocal(config, makeAtRoot);
}

}  // namespace atb_ops::hccl
