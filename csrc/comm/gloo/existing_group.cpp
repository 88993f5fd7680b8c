// configForGroup lives with ExistingGroup: only this folder includes c10d's ProcessGroup header, which is
// slow to compile.
#include "comm/gloo/existing_group.h"

#include "comm/comm_config.h"

namespace atb_ops {

CommConfig configForGroup(const std::string& backend, int32_t rank, int32_t size, const std::string& commDomain,
                          const std::string& jobKey, const c10::Device& device,
                          c10::intrusive_ptr<c10d::ProcessGroup> group, const std::vector<std::string>& rankHosts) {
  CommParam p;
  p.rank = rank;
  p.rankSize = size;
  p.backend = backend;
  p.commDomain = commDomain;
  validateCommParam(p, "atb_ops.distributed");
  CommConfig c = configFromParam(p, device);
  c.jobKey = jobKey;
  c.hostsChecked = true;  // atb_ops.distributed and the c10d backend compared the group's hosts first
  if (c.backend == "gloo" && group) {
    c.groupId = group.get();
    c.group = std::make_shared<ExistingGroup>(ExistingGroup{std::move(group)});
    c.rankHosts = rankHosts;
  }
  return c;
}

}  // namespace atb_ops
