// set_varaintpack_param's values as an operator keeps them: replaced whole, and read as one snapshot per call, so a
// thread that sets a new pack never changes a call another thread is planning, and a plan may keep the snapshot
// (AllToAllVV2 runs on its pack's layout without copying it).
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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

// The variant pack of a V operator: its host-side count inputs by name, each a list (a single count, such as
// AllGatherV's sendCount, is a list of one), which the inputs must then equal (CommOperation::countInput).
struct CountsPack {
  std::map<std::string, std::vector<int64_t>> counts;

  // The values given for `name`; null when the pack has none.
  const std::vector<int64_t>* find(const std::string& name) const;
};

// Reads `json` (ATB's set_varaintpack_param text) with `arrays` as lists and `scalars` as single numbers; a field
// left out reads as an empty list or 0. `what` names the pack in errors ("AllGatherVOperation variant pack").
CountsPack parseCountsPack(const std::string& json, const std::string& what, std::initializer_list<const char*> arrays,
                           std::initializer_list<const char*> scalars);

}  // namespace atb_ops
