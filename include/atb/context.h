// atb::Context: where an operation's work is launched (its streams). Written for atb_ops from ATB's published
// interface; on CPU ranks work completes on the calling thread, so the streams are only kept and returned.
#ifndef ATB_OPS_INCLUDE_ATB_CONTEXT_H
#define ATB_OPS_INCLUDE_ATB_CONTEXT_H

#include <acl/acl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "types.h"

namespace atb {

enum ExecuteType : int { EXECUTE_NORMAL = 0, EXECUTE_PRELAUNCH, EXECUTE_LAUNCH };

enum LaunchMode : int { KERNEL_LAUNCH_MODE = 0, GRAPH_LAUNCH_MODE };

// The order of the virtual methods is ATB's (it is the object's vtable).
class Context {
 public:
  Context() = default;
  virtual ~Context() = default;
  virtual Status SetExecuteStream(aclrtStream stream) = 0;
  virtual aclrtStream GetExecuteStream() const = 0;
  virtual Status SetAsyncTilingCopyStatus(bool enable) = 0;
  virtual bool GetAsyncTilingCopyStatus() const = 0;
  virtual Status SetExecuteStreams(const std::vector<aclrtStream>& streams) = 0;
  virtual std::vector<aclrtStream> GetExecuteStreams() = 0;
  virtual Status SetExecuteType(ExecuteType type) = 0;
  virtual ExecuteType GetExecuteType() = 0;
  virtual Status SetLaunchMode(LaunchMode mode) = 0;
  virtual LaunchMode GetLaunchMode() = 0;
};

Status CreateContext(Context** context);
Status CreateContext(Context** context, const std::function<void*(size_t)>& alloc,
                     const std::function<void(void*)>& dealloc);
Status CreateContext(Context** context, uint32_t hostTilingBlockNum, uint32_t deviceTilingBlockNum);
Status DestroyContext(Context* context);

}  // namespace atb

#endif  // ATB_OPS_INCLUDE_ATB_CONTEXT_H
