#include "comm/shm/rendezvous.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "comm/shm/peer_wait.h"
#include "comm/shm/shm_segment.h"
#include "core/status.h"

namespace atb_ops::shm {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

constexpr const char* kRecordMagic = "atb_ops-rdv-v1";

}  // namespace

std::string defaultJobKey(CommMode mode) {
  const std::string explicitId = env("ATB_OPS_JOB_ID");
  if (!explicitId.empty()) return "job:" + explicitId;
  if (mode == CommMode::MULTI_THREAD) {
    const pid_t self = ::getpid();
    return "threads:" + std::to_string(self) + ":" + std::to_string(processStartTime(self));
  }
  const std::string addr = env("MASTER_ADDR");
  const std::string port = env("MASTER_PORT");
  if (!addr.empty() && !port.empty()) {
    return "master:" + addr + ":" + port + ":" + env("TORCHELASTIC_RUN_ID");
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

std::string rendezvousPath(uint64_t keyHash) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(keyHash));
  return "/dev/shm/" + userPrefix() + "rdv." + hex;
}

void publishRendezvous(const std::string& path, const RendezvousRecord& r) {
  const std::string tmp = path + ".tmp." + randomToken();
  const int fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  ATB_CHECK(fd >= 0, ERROR_RT_FAIL, "cannot create rendezvous file '", tmp, "': ", std::strerror(errno));
  std::ostringstream text;
  text << kRecordMagic << ' ' << r.segmentName << ' ' << r.rootPid << ' ' << r.rootStartTime << '\n';
  const std::string s = text.str();
  const bool written = ::write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size());
  ::close(fd);
  if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    ATB_FAIL(ERROR_RT_FAIL, "cannot publish rendezvous file '", path, "': ", std::strerror(err));
  }
}

std::optional<RendezvousRecord> readLiveRendezvous(const std::string& path) {
  struct stat st{};
  // Only our own files: another user's file could point us at their segment.
  if (::stat(path.c_str(), &st) != 0 || st.st_uid != ::getuid()) return std::nullopt;
  std::ifstream f(path);
  std::string magic;
  RendezvousRecord r;
  if (!(f >> magic >> r.segmentName >> r.rootPid >> r.rootStartTime) || magic != kRecordMagic) {
    return std::nullopt;
  }
  // A record left by a crashed run names a dead root (or a reused pid with another start time).
  if (!processAlive(r.rootPid) || processStartTime(r.rootPid) != r.rootStartTime) return std::nullopt;
  return r;
}

}  // namespace atb_ops::shm
