// How libatb.so reports: one line per message on stderr (stdout with ASCEND_SLOG_PRINT_TO_STDOUT=1), from the
// level ATB reads from the environment: ASCEND_MODULE_LOG_LEVEL's "OP=<n>", else ASCEND_GLOBAL_LOG_LEVEL
// (0 debug, 1 info, 2 warning, 3 error, 4 none), else ASDOPS_LOG_LEVEL (older ATB releases: DEBUG, INFO, WARN,
// ERROR, FATAL); errors by default. atb::Utils::SetLogLevel / ResetLogLevel change it at run time. ATB itself
// writes log files under ~/ascend/log; a program on CPU ranks gets the same lines where it can see them.
#pragma once

#include <atb/types.h>

#include <string>

namespace atb_ops::atb_api {

bool logEnabled(atb::LogLevel level);
void logLine(atb::LogLevel level, const std::string& message);

// atb::Utils::SetLogLevel: ERROR_INVALID_PARAM for a value outside atb::LogLevel.
atb::Status setLogLevel(atb::LogLevel level);
// The environment's level again (ERROR_INVALID_PARAM, and the level unchanged, when a variable holds no level).
atb::Status resetLogLevel();

}  // namespace atb_ops::atb_api
