// atb::Context on CPU ranks: it holds the execute streams a program gives it (work completes on the calling thread,
// so they are kept, checked and returned, never waited on) and the settings ATB's Context has. Every live context
// is registered, so a destroyed or made-up Context* is refused with ERROR_INVALID_CONTEXT_ADDR, never dereferenced.
#pragma once

#include <atb/context.h>

#include <functional>
#include <optional>
#include <vector>

namespace atb_ops::atb_api {

// What an operation reads of its context when it runs: nullopt when `context` is not a live context of this
// library (destroyed, or never made by CreateContext).
struct ContextState {
  std::vector<aclrtStream> streams;
  atb::ExecuteType executeType = atb::EXECUTE_NORMAL;
};
std::optional<ContextState> liveContextState(const atb::Context* context);

class ApiContext final : public atb::Context {
 public:
  ApiContext(std::function<void*(size_t)> alloc, std::function<void(void*)> dealloc);

  atb::Status SetExecuteStream(aclrtStream stream) override;
  aclrtStream GetExecuteStream() const override;
  atb::Status SetAsyncTilingCopyStatus(bool enable) override;
  bool GetAsyncTilingCopyStatus() const override;
  atb::Status SetExecuteStreams(const std::vector<aclrtStream>& streams) override;
  std::vector<aclrtStream> GetExecuteStreams() override;
  atb::Status SetExecuteType(atb::ExecuteType type) override;
  atb::ExecuteType GetExecuteType() override;
  atb::Status SetLaunchMode(atb::LaunchMode mode) override;
  atb::LaunchMode GetLaunchMode() override;

 private:
  friend std::optional<ContextState> liveContextState(const atb::Context* context);

  // The allocator a program may hand CreateContext for ATB's internal buffers; the operators here need none.
  std::function<void*(size_t)> alloc_;
  std::function<void(void*)> dealloc_;
  std::vector<aclrtStream> streams_{nullptr};
  bool asyncTilingCopy_ = false;
  atb::ExecuteType executeType_ = atb::EXECUTE_NORMAL;
  atb::LaunchMode launchMode_ = atb::KERNEL_LAUNCH_MODE;
};

}  // namespace atb_ops::atb_api
