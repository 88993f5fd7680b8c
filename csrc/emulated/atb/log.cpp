#include "emulated/atb/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

namespace atb_ops::atb_api {
namespace {

using atb::LogLevel;

// "0".."4" as ASCEND_GLOBAL_LOG_LEVEL writes them.
std::optional<LogLevel> fromDigit(const std::string& text) {
  if (text.size() != 1 || text[0] < '0' || text[0] > '4') return std::nullopt;
  return static_cast<LogLevel>(text[0] - '0');
}

// ASDOPS_LOG_LEVEL's names; FATAL leaves only what ATB calls fatal, which libatb.so never logs: none.
std::optional<LogLevel> fromName(const std::string& text) {
  if (text == "TRACE" || text == "DEBUG") return LogLevel::DEBUG;
  if (text == "INFO") return LogLevel::INFO;
  if (text == "WARN") return LogLevel::WARN;
  if (text == "ERROR") return LogLevel::ERROR;
  if (text == "FATAL" || text == "NONE") return LogLevel::NONE;
  return std::nullopt;
}

// The "OP=<n>" item of ASCEND_MODULE_LOG_LEVEL ("MODULE=n:MODULE=n..."); "" when it has none.
std::string moduleLevel(const char* value) {
  std::istringstream items(value);
  std::string item;
  while (std::getline(items, item, ':')) {
    if (item.rfind("OP=", 0) == 0) return item.substr(3);
  }
  return "";
}

// The environment's level; nullopt when a variable that is set holds no level (it is named on stderr once).
std::optional<LogLevel> environmentLevel() {
  if (const char* module = std::getenv("ASCEND_MODULE_LOG_LEVEL")) {
    const std::string op = moduleLevel(module);
    if (!op.empty()) return fromDigit(op);
  }
  if (const char* global = std::getenv("ASCEND_GLOBAL_LOG_LEVEL")) return fromDigit(global);
  if (const char* asdops = std::getenv("ASDOPS_LOG_LEVEL")) return fromName(asdops);
  return LogLevel::ERROR;
}

std::atomic<int>& currentLevel() {
  static std::atomic<int> level{static_cast<int>(environmentLevel().value_or(LogLevel::ERROR))};
  return level;
}

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::DEBUG: return "DEBUG";
    case LogLevel::INFO: return "INFO";
    case LogLevel::WARN: return "WARN";
    case LogLevel::ERROR: return "ERROR";
    case LogLevel::NONE: break;
  }
  return "NONE";
}

}  // namespace

bool logEnabled(LogLevel level) {
  return level != LogLevel::NONE && static_cast<int>(level) >= currentLevel().load(std::memory_order_relaxed);
}

void logLine(LogLevel level, const std::string& message) {
  if (!logEnabled(level)) return;
  static const bool toStdout = [] {
    const char* v = std::getenv("ASCEND_SLOG_PRINT_TO_STDOUT");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  // One write per line, so the lines of rank threads and processes do not interleave mid-line.
  std::ostringstream line;
  line << "[atb_ops libatb] [" << levelName(level) << "] [pid " << ::getpid() << ", tid " << ::syscall(SYS_gettid)
       << "] " << message << '\n';
  const std::string text = line.str();
  std::FILE* out = toStdout ? stdout : stderr;
  std::fwrite(text.data(), 1, text.size(), out);
  std::fflush(out);
}

atb::Status setLogLevel(LogLevel level) {
  if (static_cast<int>(level) < static_cast<int>(LogLevel::DEBUG) ||
      static_cast<int>(level) > static_cast<int>(LogLevel::NONE)) {
    return atb::ERROR_INVALID_PARAM;
  }
  currentLevel().store(static_cast<int>(level));
  return atb::NO_ERROR;
}

atb::Status resetLogLevel() {
  const std::optional<LogLevel> level = environmentLevel();
  if (!level) return atb::ERROR_INVALID_PARAM;
  currentLevel().store(static_cast<int>(*level));
  return atb::NO_ERROR;
}

}  // namespace atb_ops::atb_api
