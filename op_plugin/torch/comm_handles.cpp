#include "op_plugin/torch/comm_handles.h"

#include <mutex>
#include <vector>

#include "core/status.h"

namespace atb_ops {
namespace {

struct Table {
  std::mutex mutex;
  std::vector<std::shared_ptr<Communicator>> comms;  // handle h is comms[h - 1]
};

Table& table() {
  static auto* t = new Table();  // outlives static teardown: ops may run during interpreter exit
  return *t;
}

}  // namespace

int64_t handleOf(const std::shared_ptr<Communicator>& comm) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (size_t i = 0; i < t.comms.size(); ++i) {
    if (t.comms[i] == comm) return static_cast<int64_t>(i) + 1;
  }
  t.comms.push_back(comm);
  return static_cast<int64_t>(t.comms.size());
}

std::shared_ptr<Communicator> communicatorOf(int64_t handle) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  ATB_CHECK(handle >= 1 && handle <= static_cast<int64_t>(t.comms.size()), ERROR_COMM_EMPTY,
            "no atb_ops communicator has handle ", handle);
  return t.comms[static_cast<size_t>(handle - 1)];
}

}  // namespace atb_ops
