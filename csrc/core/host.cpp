#include "core/host.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace atb_ops {

std::string hostName() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

std::string hostIdentity(const Options& options) {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  struct stat shm{};
  const std::string shmDevice = ::stat(options.shmDir.c_str(), &shm) == 0 ? std::to_string(shm.st_dev) : "";
  struct stat pidNs{};
  const std::string pids = ::stat("/proc/self/ns/pid", &pidNs) == 0 ? std::to_string(pidNs.st_ino) : "";
  return hostName() + "/" + boot + "/" + shmDevice + "/" + pids;
}

std::string hostNameOf(const std::string& identity) {
  return identity.substr(0, identity.find('/'));
}

std::string bootIdOf(const std::string& identity) {
  const size_t first = identity.find('/');
  if (first == std::string::npos) return "";
  const size_t second = identity.find('/', first + 1);
  return identity.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
}

}  // namespace atb_ops
