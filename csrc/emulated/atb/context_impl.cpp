#include "emulated/atb/context_impl.h"

#include <memory>
#include <mutex>
#include <unordered_map>

#include "emulated/atb/api_error.h"
#include "emulated/atb/log.h"

namespace atb_ops::atb_api {
namespace {

// The live contexts, owned here: DestroyContext removes one under the lock, so a reader holding the lock sees
// either a whole context or none.
struct Registry {
  std::mutex mutex;
  std::unordered_map<const atb::Context*, std::unique_ptr<ApiContext>> live;
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: programs destroy contexts until they exit
  return *r;
}

// ATB's bounds for the tiling block counts of CreateContext's third form.
constexpr uint32_t kMinHostTilingBlocks = 128;
constexpr uint32_t kMinDeviceTilingBlocks = 32;
constexpr uint32_t kMaxTilingBlocks = 1024;

atb::Status create(atb::Context** context, std::function<void*(size_t)> alloc, std::function<void(void*)> dealloc) {
  auto made = std::make_unique<ApiContext>(std::move(alloc), std::move(dealloc));
  ApiContext* raw = made.get();
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().live.emplace(raw, std::move(made));
  }
  *context = raw;
  return atb::NO_ERROR;
}

}  // namespace

ApiContext::ApiContext(std::function<void*(size_t)> alloc, std::function<void(void*)> dealloc)
    : alloc_(std::move(alloc)), dealloc_(std::move(dealloc)) {}

// The stream is taken as given (ATB does the same); Execute checks that it is still a live ACL stream.
atb::Status ApiContext::SetExecuteStream(aclrtStream stream) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  streams_.at(0) = stream;
  return atb::NO_ERROR;
}

aclrtStream ApiContext::GetExecuteStream() const {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return streams_.at(0);
}

// Tiling data is copied to an NPU by ATB; on CPU there is nothing to copy, so the setting is only remembered.
atb::Status ApiContext::SetAsyncTilingCopyStatus(bool enable) {
  asyncTilingCopy_ = enable;
  return atb::NO_ERROR;
}

bool ApiContext::GetAsyncTilingCopyStatus() const {
  return asyncTilingCopy_;
}

atb::Status ApiContext::SetExecuteStreams(const std::vector<aclrtStream>& streams) {
  if (streams.empty()) {
    logLine(atb::LogLevel::ERROR, "Context::SetExecuteStreams: the list of streams is empty; at least one is needed");
    return atb::ERROR_INVALID_PARAM;
  }
  std::lock_guard<std::mutex> lock(registry().mutex);
  streams_ = streams;
  return atb::NO_ERROR;
}

std::vector<aclrtStream> ApiContext::GetExecuteStreams() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return streams_;
}

atb::Status ApiContext::SetExecuteType(atb::ExecuteType type) {
  if (type != atb::EXECUTE_NORMAL && type != atb::EXECUTE_PRELAUNCH && type != atb::EXECUTE_LAUNCH) {
    logLine(atb::LogLevel::ERROR, "Context::SetExecuteType: " + std::to_string(static_cast<int>(type)) +
                                      " is not EXECUTE_NORMAL (0), EXECUTE_PRELAUNCH (1) or EXECUTE_LAUNCH (2)");
    return atb::ERROR_INVALID_PARAM;
  }
  executeType_ = type;
  return atb::NO_ERROR;
}

atb::ExecuteType ApiContext::GetExecuteType() {
  return executeType_;
}

atb::Status ApiContext::SetLaunchMode(atb::LaunchMode mode) {
  if (mode != atb::KERNEL_LAUNCH_MODE && mode != atb::GRAPH_LAUNCH_MODE) {
    logLine(atb::LogLevel::ERROR, "Context::SetLaunchMode: " + std::to_string(static_cast<int>(mode)) +
                                      " is not KERNEL_LAUNCH_MODE (0) or GRAPH_LAUNCH_MODE (1)");
    return atb::ERROR_INVALID_PARAM;
  }
  launchMode_ = mode;
  return atb::NO_ERROR;
}

atb::LaunchMode ApiContext::GetLaunchMode() {
  return launchMode_;
}

std::optional<ContextState> liveContextState(const atb::Context* context) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  const auto it = registry().live.find(context);
  if (it == registry().live.end()) return std::nullopt;
  // Read through the registry's own pointer: `context` is only compared, never dereferenced.
  return ContextState{it->second->streams_, it->second->executeType_};
}

}  // namespace atb_ops::atb_api

namespace atb {

using atb_ops::atb_api::guard;

Status CreateContext(Context** context) {
  return guard("atb::CreateContext", [&] {
    ATB_API_CHECK(context != nullptr, ERROR_INVALID_PARAM, "CreateContext: the Context** to return it in is null");
    return atb_ops::atb_api::create(context, nullptr, nullptr);
  });
}

Status CreateContext(Context** context, const std::function<void*(size_t)>& alloc,
                     const std::function<void(void*)>& dealloc) {
  return guard("atb::CreateContext", [&] {
    ATB_API_CHECK(context != nullptr, ERROR_INVALID_PARAM, "CreateContext: the Context** to return it in is null");
    return atb_ops::atb_api::create(context, alloc, dealloc);
  });
}

Status CreateContext(Context** context, uint32_t hostTilingBlockNum, uint32_t deviceTilingBlockNum) {
  using namespace atb_ops::atb_api;
  return guard("atb::CreateContext", [&] {
    ATB_API_CHECK(context != nullptr, ERROR_INVALID_PARAM, "CreateContext: the Context** to return it in is null");
    ATB_API_CHECK(hostTilingBlockNum >= kMinHostTilingBlocks && hostTilingBlockNum <= kMaxTilingBlocks,
                  ERROR_INVALID_PARAM, "CreateContext: hostTilingBlockNum is ", hostTilingBlockNum, "; must be in [",
                  kMinHostTilingBlocks, ", ", kMaxTilingBlocks, "]");
    ATB_API_CHECK(deviceTilingBlockNum >= kMinDeviceTilingBlocks && deviceTilingBlockNum <= kMaxTilingBlocks,
                  ERROR_INVALID_PARAM, "CreateContext: deviceTilingBlockNum is ", deviceTilingBlockNum,
                  "; must be in [", kMinDeviceTilingBlocks, ", ", kMaxTilingBlocks, "]");
    return create(context, nullptr, nullptr);
  });
}

// A null context is accepted (ATB returns NO_ERROR); one that is not live is reported, not deleted twice.
Status DestroyContext(Context* context) {
  return guard("atb::DestroyContext", [&] {
    if (context == nullptr) return NO_ERROR;
    std::unique_ptr<atb_ops::atb_api::ApiContext> gone;  // deleted after the lock
    auto& r = atb_ops::atb_api::registry();
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      const auto it = r.live.find(context);
      ATB_API_CHECK(it != r.live.end(), ERROR_INVALID_CONTEXT_ADDR, "DestroyContext: ", static_cast<void*>(context),
                    " is not a live context (destroyed already, or not made by atb::CreateContext)");
      gone = std::move(it->second);
      r.live.erase(it);
    }
    return NO_ERROR;
  });
}

}  // namespace atb
