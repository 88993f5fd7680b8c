#include "comm/bootstrap/job_scope.h"

#include <unistd.h>

#include "core/process.h"

namespace atb_ops {

namespace {
constexpr char kParentPrefix[] = "parent:";
}  // namespace

std::string defaultJobKey(const Options& o, CommMode mode) {
  if (!o.jobId.empty()) return "job:" + o.jobId;
  if (mode == CommMode::MULTI_THREAD) {
    const pid_t self = ::getpid();
    return "threads:" + std::to_string(self) + ":" + std::to_string(processStartTime(self));
  }
  const bool master = !o.masterAddr.empty() && !o.masterPort.empty();
  if (master && !o.elasticRunId.empty()) {
    return "master:" + o.masterAddr + ":" + o.masterPort + ":" + o.elasticRunId;
  }
  if (!o.launcherJob.empty()) return "launcher:" + o.launcherJob;
  const pid_t parent = ::getppid();
  const std::string guess = kParentPrefix + std::to_string(parent) + ":" + std::to_string(processStartTime(parent));
  // MASTER_ADDR/MASTER_PORT without torchrun's agent: nobody holds the port, so two jobs may export the same pair.
  // They narrow the guess (jobs of one parent on different ports never meet), never replace it.
  return master ? "master:" + o.masterAddr + ":" + o.masterPort + "|" + guess : guess;
}

bool parentScoped(const std::string& jobKey) {
  // A key may join the guess to something shared by several jobs ("table|parent:...": a rank table's file).
  size_t at = 0;
  while (at <= jobKey.size()) {
    if (jobKey.compare(at, sizeof(kParentPrefix) - 1, kParentPrefix) == 0) return true;
    const size_t bar = jobKey.find('|', at);
    if (bar == std::string::npos) return false;
    at = bar + 1;
  }
  return false;
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
