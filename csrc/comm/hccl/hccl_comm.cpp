#include "comm/hccl/hccl_comm.h"

#include <c10/util/Exception.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "comm/bootstrap/bootstrap.h"
#include "comm/hccl/hccl_check.h"
#include "core/status.h"

namespace atb_ops::hccl {
namespace {

using Clock = std::chrono::steady_clock;

std::string describe(const CommConfig& c) {
  return "(rank " + std::to_string(c.rank) + " of rankSize " + std::to_string(c.rankSize) + ", commDomain '" +
         c.commDomain + "')";
}

// Destruction can run at interpreter exit or while unwinding: report, never throw.
void destroyQuietly(HcclApi& api, CommHandle comm) {
  if (comm == nullptr) return;
  const int32_t rc = api.commDestroy(comm);
  if (rc != kSuccess) {
    TORCH_WARN("atb_ops: HcclCommDestroy(", comm, ") returned ", rc, " (", resultName(rc), ": ", api.errorString(rc),
               ")");
  }
}

// Every communicator HcclCommInitAll made in one call; the last rank to let go destroys them all.
struct InitAllGroup {
  std::shared_ptr<HcclApi> api;
  std::vector<CommHandle> comms;
  ~InitAllGroup() {
    for (CommHandle c : comms) destroyQuietly(*api, c);
  }
};

// Ranks (threads) of one multi-thread communicator gathering their devices before the one HcclCommInitAll.
struct PendingInitAll {
  explicit PendingInitAll(int32_t n) : devices(n, -1), joined(n, false) {}
  std::mutex m;
  std::condition_variable cv;
  std::vector<int32_t> devices;
  std::vector<bool> joined;
  int32_t arrived = 0;
  bool done = false;
  int32_t rc = kSuccess;
  std::shared_ptr<InitAllGroup> group;
};

std::mutex& pendingMutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, std::shared_ptr<PendingInitAll>>& pendingGroups() {
  static std::map<std::string, std::shared_ptr<PendingInitAll>> p;
  return p;
}

void forgetPending(const std::string& key, const std::shared_ptr<PendingInitAll>& p) {
  std::lock_guard<std::mutex> lock(pendingMutex());
  auto it = pendingGroups().find(key);
  if (it != pendingGroups().end() && it->second == p) pendingGroups().erase(it);
}

HcclCommRef initAll(const std::shared_ptr<HcclApi>& api, const CommConfig& c) {
  // The job is this process (the ranks are its threads), so commDomain and size name the group.
  const std::string key = c.commDomain + "|" + std::to_string(c.rankSize);
  std::shared_ptr<PendingInitAll> p;
  {
    std::lock_guard<std::mutex> lock(pendingMutex());
    auto& slot = pendingGroups()[key];
    if (!slot) slot = std::make_shared<PendingInitAll>(c.rankSize);
    p = slot;
  }
  std::unique_lock<std::mutex> lock(p->m);
  ATB_CHECK(!p->joined[c.rank], ERROR_INVALID_PARAM, "hccl multi-thread (commMode 1): rank ", c.rank,
            " is already being created by another thread ", describe(c), "; every thread needs its own 'rank'");
  p->joined[c.rank] = true;
  p->devices[c.rank] = deviceFor(c);
  ++p->arrived;
  if (p->arrived == c.rankSize) {
    // A later communicator with the same key starts a fresh gathering.
    forgetPending(key, p);
    std::vector<CommHandle> comms(c.rankSize, nullptr);
    p->rc = api->commInitAll(static_cast<uint32_t>(c.rankSize), p->devices.data(), comms.data());
    if (p->rc == kSuccess) {
      p->group = std::make_shared<InitAllGroup>();
      p->group->api = api;
      p->group->comms = std::move(comms);
    }
    p->done = true;
    p->cv.notify_all();
  } else {
    if (!p->cv.wait_until(lock, Clock::now() + c.options.timeout.value, [&] { return p->done; })) {
      std::string missing;
      for (int32_t r = 0; r < c.rankSize; ++r) {
        if (!p->joined[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      // Step back out so a retry can join afresh.
      p->joined[c.rank] = false;
      if (--p->arrived == 0) forgetPending(key, p);
      ATB_FAIL(ERROR_COMM_TIMEOUT, "hccl multi-thread (commMode 1): rank(s) ", missing, " never joined ", describe(c),
               " within ", c.options.timeout.describe(), "; each rank is one thread of this process");
    }
  }
  ATB_HCCL_CHECK(*api, "HcclCommInitAll", p->rc, "for ", c.rankSize, " devices ",
                 c10::IntArrayRef(std::vector<int64_t>(p->devices.begin(), p->devices.end())), " ", describe(c));
  CommHandle mine = p->group->comms[c.rank];
  return HcclCommRef::shared(p->group, mine);
}

}  // namespace

const char* originName(CommOrigin o) {
  switch (o) {
    case CommOrigin::kAdopted: return "adopted hcclComm";
    case CommOrigin::kRankTable: return "HcclCommInitClusterInfo";
    case CommOrigin::kInitAll: return "HcclCommInitAll";
    case CommOrigin::kRootInfo: return "HcclCommInitRootInfo";
  }
  return "unknown";
}

HcclCommRef HcclCommRef::adopt(CommHandle comm) {
  HcclCommRef r;
  r.comm_ = comm;
  r.origin_ = CommOrigin::kAdopted;
  return r;
}

HcclCommRef HcclCommRef::own(std::shared_ptr<HcclApi> api, CommHandle comm, CommOrigin origin) {
  HcclCommRef r;
  r.comm_ = comm;
  r.origin_ = origin;
  r.keeper_ = std::shared_ptr<void>(comm, [api = std::move(api)](void* c) { destroyQuietly(*api, c); });
  return r;
}

HcclCommRef HcclCommRef::shared(std::shared_ptr<void> keeper, CommHandle comm) {
  HcclCommRef r;
  r.comm_ = comm;
  r.origin_ = CommOrigin::kInitAll;
  r.keeper_ = std::move(keeper);
  return r;
}

int32_t deviceFor(const CommConfig& c) {
  return c.deviceIndex >= 0 ? c.deviceIndex : c.rank;
}

ScopedDevice::ScopedDevice(HcclApi& api, int32_t device) : api_(api) {
  if (device < 0) return;
  int32_t current = -1;
  if (api_.getDevice(&current) == kSuccess && current == device) return;
  ATB_ACL_CHECK(api_, "aclrtSetDevice", api_.setDevice(device), "for device ", device);
  previous_ = current;
}

ScopedDevice::~ScopedDevice() {
  if (previous_ >= 0) api_.setDevice(previous_);
}

HcclCommRef acquireComm(const std::shared_ptr<HcclApi>& api, const CommConfig& c) {
  HcclCommRef ref;
  if (c.handle != 0) {
    ref = HcclCommRef::adopt(reinterpret_cast<CommHandle>(static_cast<uintptr_t>(c.handle)));
  } else if (!c.rankTableFile.empty()) {
    ScopedDevice device(*api, deviceFor(c));
    CommHandle comm = nullptr;
    ATB_HCCL_CHECK(*api, "HcclCommInitClusterInfo", api->commInitClusterInfo(c.rankTableFile, c.rank, &comm),
                   "with rankTableFile '", c.rankTableFile, "' ", describe(c));
    ref = HcclCommRef::own(api, comm, CommOrigin::kRankTable);
  } else if (c.commMode == CommMode::MULTI_THREAD) {
    ref = initAll(api, c);
  } else {
    ScopedDevice device(*api, deviceFor(c));
    // rankRoot's HcclGetRootInfo, shared with every rank through the bootstrap (store or node-local).
    std::unique_ptr<Bootstrap> bootstrap = makeBootstrap(c, "hccl");
    std::string bytes;
    if (c.rank == c.rankRoot) {
      RootInfo made{};
      ATB_HCCL_CHECK(*api, "HcclGetRootInfo", api->getRootInfo(&made), "on root rank ", c.rankRoot, " ", describe(c));
      bytes.assign(made.data(), made.size());
    }
    bytes = bootstrap->broadcast(bytes);
    ATB_CHECK(bytes.size() == kRootInfoBytes, ERROR_HCCL_FAIL, "hccl: the bootstrap (", bootstrap->describe(),
              ") delivered ", bytes.size(), " bytes; root info is ", kRootInfoBytes, " bytes ", describe(c));
    RootInfo info;
    std::memcpy(info.data(), bytes.data(), kRootInfoBytes);
    CommHandle comm = nullptr;
    ATB_HCCL_CHECK(*api, "HcclCommInitRootInfo",
                   api->commInitRootInfo(static_cast<uint32_t>(c.rankSize), info, static_cast<uint32_t>(c.rank), &comm),
                   describe(c));
    ref = HcclCommRef::own(api, comm, CommOrigin::kRootInfo);
  }

  // An adopted handle from another group, or a rank table that numbers ranks differently, would move data
  // to the wrong peers: catch it now.
  uint32_t size = 0;
  uint32_t rank = 0;
  ATB_HCCL_CHECK(*api, "HcclGetRankSize", api->getRankSize(ref.get(), &size), "on the ", originName(ref.origin()),
                 " communicator ", describe(c));
  ATB_HCCL_CHECK(*api, "HcclGetRankId", api->getRankId(ref.get(), &rank), "on the ", originName(ref.origin()),
                 " communicator ", describe(c));
  const bool agrees = static_cast<int64_t>(size) == c.rankSize && static_cast<int64_t>(rank) == c.rank;
  if (ref.owned()) {
    ATB_CHECK(agrees, ERROR_HCCL_FAIL, originName(ref.origin()), " made a communicator with rank ", rank, " of size ",
              size, ", but the param says ", describe(c));
  } else {
    ATB_CHECK(agrees, ERROR_INVALID_PARAM, "hcclComm ", ref.get(), " is rank ", rank, " of size ", size,
              ", but the param says ", describe(c), "; pass the communicator of this rank's group");
  }
  return ref;
}

}  // namespace atb_ops::hccl
