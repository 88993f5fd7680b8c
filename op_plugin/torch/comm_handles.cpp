#include "op_plugin/torch/comm_handles.h"

#include <map>
#include <mutex>
#include <unordered_map>

#include "core/status.h"

namespace atb_ops {
namespace {

struct Table {
  std::mutex mutex;
  int64_t next = 1;
  std::unordered_map<int64_t, std::shared_ptr<Communicator>> comms;
  std::map<const Communicator*, int64_t> handles;
};

Table& table() {
  static auto* t = new Table();  // outlives static teardown: ops may run during interpreter exit
  return *t;
}

}  // namespace

int64_t handleOf(const std::shared_ptr<Communicator>& comm) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (auto it = t.handles.find(comm.get()); it != t.handles.end()) return it->second;
  const int64_t h = t.next++;
  t.comms.emplace(h, comm);
  t.handles.emplace(comm.get(), h);
  return h;
}

std::shared_ptr<Communicator> communicatorOf(int64_t handle) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.comms.find(handle);
  ATB_CHECK(it != t.comms.end(), ERROR_COMM_EMPTY, "no atb_ops communicator has handle ", handle,
            " (released by clear_communicators, or never made)");
  return it->second;
}

void releaseHandle(int64_t handle) {
  Table& t = table();
  std::shared_ptr<Communicator> doomed;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.comms.find(handle);
  if (it == t.comms.end()) return;
  doomed = std::move(it->second);
  t.handles.erase(doomed.get());
  t.comms.erase(it);
}

void releaseAllHandles() {
  Table& t = table();
  std::unordered_map<int64_t, std::shared_ptr<Communicator>> doomed;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    doomed.swap(t.comms);
    t.handles.clear();
  }
}

}  // namespace atb_ops
