#include "core/process.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>

namespace atb_ops {
namespace {

std::atomic<pid_t> cachedPid{0};

void forgetCachedPid() {
  cachedPid.store(0, std::memory_order_relaxed);
}

}  // namespace

pid_t thisProcessId() {
  const pid_t known = cachedPid.load(std::memory_order_relaxed);
  if (known != 0) return known;
  // Registered before the first value is cached, so no fork() can copy a cached value into a child unseen.
  static const int registered = ::pthread_atfork(nullptr, nullptr, forgetCachedPid);
  (void)registered;
  const pid_t self = ::getpid();
  cachedPid.store(self, std::memory_order_relaxed);
  return self;
}

bool processAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A killed child stays a zombie until its parent reaps it; it answers kill(0) but will never post.
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return errno != ENOENT;
  char buf[512] = {0};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  const char* close = std::strrchr(buf, ')');  // the command name may contain spaces and ')'
  if (n == 0 || close == nullptr || close[1] == '\0') return true;
  const char state = close[2];
  return state != 'Z' && state != 'X';
}

uint64_t processStartTime(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = all.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(all.substr(close + 2));
  std::string field;
  // Field 22 (starttime); after ')' the next field is 3 (state).
  for (int i = 3; i <= 22 && (rest >> field); ++i) {
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  }
  return 0;
}

namespace {

std::string readAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The parent pid and state of /proc/<pid>/stat (fields 4 and 3); ppid -1 when unreadable.
std::pair<pid_t, char> parentAndState(pid_t pid) {
  const std::string all = readAll("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = all.rfind(')');
  if (close == std::string::npos || close + 4 >= all.size()) return {-1, '?'};
  std::istringstream rest(all.substr(close + 2));
  char state = '?';
  long ppid = -1;
  rest >> state >> ppid;
  return {static_cast<pid_t>(ppid), state};
}

std::string programOf(pid_t pid) {
  std::string cmd = readAll("/proc/" + std::to_string(pid) + "/cmdline");
  std::string out;
  for (size_t i = 0; i < cmd.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(cmd[i]))) {
      if (out.empty() || out.back() != '#') out.push_back('#');
    } else {
      out.push_back(cmd[i]);
    }
  }
  return out;
}

bool scopedByEnvironment(pid_t pid) {
  const std::string env = readAll("/proc/" + std::to_string(pid) + "/environ");
  size_t at = 0;
  while (at < env.size()) {
    const size_t end = env.find('\0', at);
    const std::string entry = env.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (entry.rfind("ATB_OPS_JOB_ID=", 0) == 0 || entry.rfind("MASTER_PORT=", 0) == 0) return true;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return false;
}

}  // namespace

std::vector<pid_t> unscopedSiblings() {
  const pid_t self = ::getpid();
  const pid_t parent = ::getppid();
  const std::string mine = programOf(self);
  std::vector<pid_t> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid == self) continue;
    const auto [ppid, state] = parentAndState(static_cast<pid_t>(pid));
    if (ppid != parent || state == 'Z' || state == 'X') continue;
    if (programOf(static_cast<pid_t>(pid)) != mine || scopedByEnvironment(static_cast<pid_t>(pid))) continue;
    found.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return found;
}

}  // namespace atb_ops
