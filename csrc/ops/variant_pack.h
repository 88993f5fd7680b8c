// set_varaintpack_param's values as an operator keeps them: replaced whole, and read as one snapshot per call, so a
// thread that sets a new pack never changes a call another thread is planning, and a plan may keep the snapshot
// (AllToAllVV2 runs on its pack's layout without copying it).
#pragma once

#include <memory>
#include <utility>

namespace atb_ops {

template <typename Pack>
class VariantPackSlot {
 public:
  void set(Pack pack) { std::atomic_store(&pack_, std::make_shared<const Pack>(std::move(pack))); }
  // Null until set.
  std::shared_ptr<const Pack> get() const { return std::atomic_load(&pack_); }

 private:
  std::shared_ptr<const Pack> pack_;
};

}  // namespace atb_ops
