#include "comm/bootstrap/job_scope.h"

#include <unistd.h>

#include "core/process.h"

namespace atb_ops {

std::string defaultJobKey(const Options& o, CommMode mode) {
  if (!o.jobId.empty()) return "job:" + o.jobId;
  if (mode == CommMode::MULTI_THREAD) {
    const pid_t self = ::getpid();
    return "threads:" + std::to_string(self) + ":" + std::to_string(processStartTime(self));
  }
  if (!o.masterAddr.empty() && !o.masterPort.empty()) {
    return "master:" + o.masterAddr + ":" + o.masterPort + ":" + o.elasticRunId;
  }
  const pid_t parent = ::getppid();
  return "parent:" + std::to_string(parent) + ":" + std::to_string(processStartTime(parent));
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 14695981039346656037ULL;  // FNV-1a 64-bit offset basis (0xcbf29ce484222325)
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace atb_ops
