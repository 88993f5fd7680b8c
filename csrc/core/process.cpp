#include "core/process.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/options.h"

namespace atb_ops {
namespace {

std::atomic<pid_t> cachedPid{0};
std::atomic<bool> exiting{false};

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

void markProcessExiting() {
  exiting.store(true, std::memory_order_release);
}

bool processExiting() {
  return exiting.load(std::memory_order_acquire);
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

// A sibling whose environment proves its own job is no rank of a parent-scoped one (the rule of options.h).
bool scopedByEnvironment(pid_t pid) {
  const std::string env = readAll("/proc/" + std::to_string(pid) + "/environ");
  std::map<std::string, std::string> values;
  size_t at = 0;
  while (at < env.size()) {
    size_t end = env.find('\0', at);
    if (end == std::string::npos) end = env.size();
    const size_t eq = env.find('=', at);
    if (eq != std::string::npos && eq < end && eq + 1 < end)
      values.emplace(env.substr(at, eq - at), env.substr(eq + 1, end - eq - 1));
    at = end + 1;
  }
  return environmentProvesJob([&values](const char* name) -> std::optional<std::string> {
    const auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

std::string commandLineOf(pid_t pid) {
  return readAll("/proc/" + std::to_string(pid) + "/cmdline");
}

// multiprocessing's own helpers (the resource tracker, the fork server) are children of a rank's parent too,
// and never ranks. `cmd`: the process's command line (commandLineOf).
bool multiprocessingHelper(const std::string& cmd) {
  return cmd.find("multiprocessing.resource_tracker") != std::string::npos ||
         cmd.find("multiprocessing.forkserver") != std::string::npos;
}

std::vector<std::string> argumentsOf(const std::string& cmd) {
  std::vector<std::string> args;
  size_t at = 0;
  while (at < cmd.size()) {
    const size_t end = cmd.find('\0', at);
    args.push_back(cmd.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return args;
}

// What a process runs: its executable and, for a Python interpreter, the options up to and including the script,
// module or -c code, but not the arguments after it (ranks are often told their rank there). Empty when unreadable,
// and for multiprocessing's spawned children, whose command line is the same for a rank, a Pool worker and a
// Manager's server. `cmd`: its command line (commandLineOf), read once by the caller.
std::string programOf(pid_t pid, const std::string& cmd) {
  char exe[4096];
  const ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  std::string program(exe, static_cast<size_t>(n));
  const std::vector<std::string> args = argumentsOf(cmd);
  for (const std::string& a : args) {
    if (a == "--multiprocessing-fork" || a.find("multiprocessing.spawn") != std::string::npos) return "";
  }
  const size_t slash = program.rfind('/');
  if (program.compare(slash == std::string::npos ? 0 : slash + 1, 6, "python") != 0) return program;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    program += '\0' + a;
    if ((a == "-X" || a == "-W") && i + 1 < args.size()) {
      program += '\0' + args[++i];
    } else if (a == "-c" || a == "-m") {
      if (i + 1 < args.size()) program += '\0' + args[i + 1];
      break;
    } else if (a.empty() || a[0] != '-') {
      break;  // the script
    }
  }
  return program;
}

}  // namespace

std::vector<Sibling> unscopedSiblings() {
  const pid_t self = ::getpid();
  const pid_t parent = ::getppid();
  std::vector<Sibling> found;
  // A forked child keeps its parent's command line: only processes started anew (a launcher re-running its own
  // script with other arguments included) tell ranks from the parent's forked helpers.
  const std::string parentCommand = commandLineOf(parent);
  const std::string ownCommand = commandLineOf(self);
  const std::string program = programOf(self, ownCommand);
  const bool comparePrograms = !program.empty() && ownCommand != parentCommand;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid == self) continue;
    const auto [ppid, state] = parentAndState(static_cast<pid_t>(pid));
    if (ppid != parent || state == 'Z' || state == 'X') continue;
    const std::string cmd = commandLineOf(static_cast<pid_t>(pid));
    if (scopedByEnvironment(static_cast<pid_t>(pid)) || multiprocessingHelper(cmd)) continue;
    const bool sameProgram =
        comparePrograms && cmd != parentCommand && programOf(static_cast<pid_t>(pid), cmd) == program;
    found.push_back(Sibling{static_cast<pid_t>(pid), processStartTime(static_cast<pid_t>(pid)), sameProgram});
  }
  ::closedir(proc);
  return found;
}

namespace {

// "/libatb_ops.so\n" as a line of /proc/<pid>/maps ends with it: the name of the file this code was loaded from.
std::string ownLibraryLineEnd() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&loadsAtbOps), &info) == 0 || info.dli_fname == nullptr) return "";
  const char* name = std::strrchr(info.dli_fname, '/');
  return std::string(name == nullptr ? "/" : "") + (name == nullptr ? info.dli_fname : name) + "\n";
}

}  // namespace

bool loadsAtbOps(pid_t pid) {
  static const std::string lineEnd = ownLibraryLineEnd();
  if (lineEnd.empty()) return false;
  // Read in pieces: a torch process maps a few thousand regions, and the name may straddle two reads.
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/maps").c_str(), "r");
  if (f == nullptr) return false;
  std::string window;
  char buf[16384];
  bool found = false;
  size_t n = 0;
  while (!found && (n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    window.append(buf, n);
    found = window.find(lineEnd) != std::string::npos;
    if (window.size() > lineEnd.size()) window.erase(0, window.size() - lineEnd.size());
  }
  std::fclose(f);
  return found;
}

uint64_t ticksSinceBoot() {
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  const uint64_t hz = static_cast<uint64_t>(::sysconf(_SC_CLK_TCK));
  return static_cast<uint64_t>(now.tv_sec) * hz + static_cast<uint64_t>(now.tv_nsec) * hz / 1000000000ull;
}

uint64_t ticksPerSecond() {
  return static_cast<uint64_t>(::sysconf(_SC_CLK_TCK));
}

}  // namespace atb_ops
