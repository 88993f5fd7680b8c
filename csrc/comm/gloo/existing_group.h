// The torch.distributed group a gloo communicator runs on when the caller brings one (atb_ops.distributed).
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace atb_ops {

struct ExistingGroup {
  c10::intrusive_ptr<c10d::ProcessGroup> group;
};

}  // namespace atb_ops
