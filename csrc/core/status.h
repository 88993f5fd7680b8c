// ATB-style status codes and the one CHECK macro every layer uses to raise them.
#pragma once

#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include <cstdint>
#include <string>

namespace atb_ops {

// Numbering follows ATB's atb::ErrorType so codes read the same in logs.
enum class Status : int32_t {
  NO_ERROR = 0,
  ERROR_INVALID_PARAM = 1,
  ERROR_INVALID_GRAPH = 2,
  ERROR_INTERNAL_ERROR = 3,
  ERROR_RT_FAIL = 4,
  ERROR_INVALID_IN_TENSOR_NUM = 5,
  ERROR_INVALID_TENSOR_DTYPE = 6,
  ERROR_INVALID_TENSOR_FORMAT = 7,
  ERROR_INVALID_TENSOR_DIM = 8,
  ERROR_INVALID_TENSOR_SIZE = 9,
  ERROR_OPERATION_NULL_RUNNER = 10,
  ERROR_INVALID_TENSOR_INI_MATCH = 13,  // a dtype combination outside the operator's table
  ERROR_INVALID_TENSOR_DIM_NUM = 16,    // ATB: 16 (15 is ERROR_INVALID_TENSOR_NUM)
  ERROR_HCCL_FAIL = 25,
  ERROR_COMM_EMPTY = 28,
  // Beyond ATB's table: a peer that never answered, or died.
  ERROR_COMM_TIMEOUT = 100,
  ERROR_COMM_PEER_DIED = 101,
  ERROR_NCCL_FAIL = 102,
  // Ctrl-C (SIGINT) while this rank waited for a peer: the call was abandoned midway.
  ERROR_INTERRUPTED = 103,
  // A peer released this communicator (its last operation went) before this call: ranks whose operations were
  // re-made at different times meet in a fresh communicator (an operation's first call retries there once).
  ERROR_COMM_PEER_LEFT = 104,
};

const char* statusName(Status s);

// Faults after which the ranks of a communicator may be out of step: the communicator is unusable.
bool isCommunicatorFault(Status s);

// A c10::Error (so Python sees RuntimeError) that remembers its status, so the layers above can tell a
// bad argument from a broken communicator without parsing messages.
class StatusError : public c10::Error {
 public:
  StatusError(Status status, const char* func, const char* file, uint32_t line, std::string message)
      : c10::Error(c10::SourceLocation{func, file, line}, std::move(message)), status_(status) {}
  Status status() const { return status_; }

 private:
  Status status_;
};

namespace detail {
[[noreturn]] void raise(Status status, const char* func, const char* file, uint32_t line, const std::string& message);
}  // namespace detail

}  // namespace atb_ops

// Raises a StatusError whose message starts with the ATB error name, e.g.
// "ERROR_INVALID_PARAM: rankSize must be > 0, got 0".
#define ATB_CHECK(cond, status, ...)                                                                           \
  do {                                                                                                         \
    if (C10_UNLIKELY(!(cond))) {                                                                               \
      ::atb_ops::detail::raise(::atb_ops::Status::status, __func__, __FILE__, static_cast<uint32_t>(__LINE__), \
                               ::c10::str(__VA_ARGS__));                                                       \
    }                                                                                                          \
  } while (0)

#define ATB_FAIL(status, ...)                                                                              \
  ::atb_ops::detail::raise(::atb_ops::Status::status, __func__, __FILE__, static_cast<uint32_t>(__LINE__), \
                           ::c10::str(__VA_ARGS__))
