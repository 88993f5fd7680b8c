#include "comm/backend_registry.h"

#include <unistd.h>

#include <c10/util/StringUtil.h>

#include <map>
#include <mutex>
#include <vector>

#include "comm/bootstrap/job_census.h"
#include "comm/communicator.h"
#include "comm/host_span.h"
#include "comm/two_level_communicator.h"
#include "core/status.h"

namespace atb_ops {
namespace {

using Factories = std::map<std::pair<std::string, c10::DeviceType>, CommFactory>;

std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}

Factories& factories() {
  static Factories f;
  return f;
}

const char* deviceName(c10::DeviceType d) {
  switch (d) {
    case c10::DeviceType::CPU: return "cpu";
    case c10::DeviceType::CUDA: return "cuda";
    case c10::DeviceType::PrivateUse1: return "npu";
    default: return "other";
  }
}

}  // namespace

void registerBackend(const std::string& name, c10::DeviceType device, CommFactory factory) {
  std::lock_guard<std::mutex> lock(registryMutex());
  factories()[{name, device}] = std::move(factory);
}

bool hasBackend(const std::string& name, c10::DeviceType device) {
  std::lock_guard<std::mutex> lock(registryMutex());
  return factories().count({name, device}) > 0;
}

bool hasBackend(const std::string& name) {
  std::lock_guard<std::mutex> lock(registryMutex());
  for (const auto& kv : factories()) {
    if (kv.first.first == name) return true;
  }
  return false;
}

std::vector<std::string> registeredBackends() {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::vector<std::string> names;
  for (const auto& kv : factories()) names.push_back(kv.first.first + " (" + deviceName(kv.first.second) + ")");
  return names;
}

std::shared_ptr<Communicator> createCommunicator(const CommConfig& asked) {
  MembershipHolds holds;  // the claims of the rendezvous below stay live while this communicator does
  const CommConfig config = placeAcrossHosts(asked);
  std::shared_ptr<Communicator> made;
  const std::unique_ptr<HostLayout> hosts =
      config.rankHosts.empty() || !config.options.twoLevel ? nullptr : HostLayout::of(config.rankHosts, config.rank);
  if (hosts) {
    made = makeTwoLevelCommunicator(config, *hosts);  // of communicators this function makes
  } else {
    CommFactory factory;
    {
      std::lock_guard<std::mutex> lock(registryMutex());
      auto it = factories().find({config.backend, config.deviceType});
      if (it != factories().end()) factory = it->second;
    }
    ATB_CHECK(factory, ERROR_COMM_EMPTY, "backend '", config.backend, "' for ", deviceName(config.deviceType),
              " tensors is not built into this atb_ops; built: ", c10::Join(", ", registeredBackends()));
    made = factory(config);
  }
  Communicator* raw = made.get();
  // The last user in a fork()ed child must not tear down what the parent still uses (its process group's
  // threads do not exist in the child, its vendor communicator is the parent's): there it is leaked.
  // Moved out on the call: the deleter itself lives as long as the cache's weak reference.
  return std::shared_ptr<Communicator>(
      raw, [made = std::move(made), held = holds.take(), creator = ::getpid()](Communicator*) mutable {
        const std::vector<std::shared_ptr<void>> claims = std::move(held);  // released after the communicator
        std::shared_ptr<Communicator> last = std::move(made);
        if (::getpid() != creator) new std::shared_ptr<Communicator>(std::move(last));
      });
}

}  // namespace atb_ops
