// Events: recorded on a stream, then complete at once (the work before them is done when it is issued).
#include <acl/acl_rt.h>

#include <atomic>
#include <memory>

#include "emulated/acl/acl_status.h"
#include "emulated/acl/handle_table.h"

namespace atb_ops::acl_cpu {

aclError checkStream(const char* caller, aclrtStream stream);  // streams.cpp

namespace {

struct Event {
  uint32_t flags = 0;
  std::atomic<bool> recorded{false};
};

HandleTable<Event>& events() {
  static auto* table = new HandleTable<Event>(0xe0000000);  // never destroyed: used until the process ends
  return *table;
}

std::shared_ptr<Event> findEvent(aclrtEvent event) {
  return events().find(event);
}

constexpr uint32_t kKnownFlags = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE;

}  // namespace
}  // namespace atb_ops::acl_cpu

#define ACL_CPU_FIND_EVENT(found, event)                                                     \
  const std::shared_ptr<atb_ops::acl_cpu::Event> found = atb_ops::acl_cpu::findEvent(event); \
  ACL_CPU_CHECK(found != nullptr, ACL_ERROR_INVALID_PARAM, "event ", (event),                \
                " is not a live event (destroyed, or not made by aclrtCreateEvent)")

extern "C" {

aclError aclrtCreateEventWithFlag(aclrtEvent* event, uint32_t flag) {
  ACL_CPU_CHECK(event != nullptr, ACL_ERROR_INVALID_PARAM, "event is null");
  ACL_CPU_CHECK((flag & ~atb_ops::acl_cpu::kKnownFlags) == 0, ACL_ERROR_INVALID_PARAM, "flag 0x", std::hex, flag,
                " has bits that are not ACL_EVENT_SYNC, ACL_EVENT_CAPTURE_STREAM_PROGRESS or ACL_EVENT_TIME_LINE");
  auto made = std::make_shared<atb_ops::acl_cpu::Event>();
  made->flags = flag;
  *event = atb_ops::acl_cpu::events().add(std::move(made));
  return ACL_SUCCESS;
}

aclError aclrtCreateEvent(aclrtEvent* event) {
  ACL_CPU_CHECK(event != nullptr, ACL_ERROR_INVALID_PARAM, "event is null");
  return aclrtCreateEventWithFlag(event, ACL_EVENT_SYNC);
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  ACL_CPU_CHECK(atb_ops::acl_cpu::events().remove(event), ACL_ERROR_INVALID_PARAM, "event ", event,
                " is not a live event (destroyed already, or not made by aclrtCreateEvent)");
  return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  ACL_CPU_FIND_EVENT(found, event);
  const aclError rc = atb_ops::acl_cpu::checkStream(__func__, stream);
  if (rc != ACL_SUCCESS) return rc;
  found->recorded = true;
  return ACL_SUCCESS;
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus* status) {
  ACL_CPU_CHECK(status != nullptr, ACL_ERROR_INVALID_PARAM, "status is null");
  ACL_CPU_FIND_EVENT(found, event);
  *status = found->recorded ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
  ACL_CPU_FIND_EVENT(found, event);
  return ACL_SUCCESS;
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  ACL_CPU_FIND_EVENT(found, event);
  return atb_ops::acl_cpu::checkStream(__func__, stream);
}

}  // extern "C"
