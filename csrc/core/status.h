// ATB-style status codes and the one CHECK macro every layer uses to raise them.
#pragma once

#include <c10/util/Exception.h>

#include <cstdint>

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
  ERROR_HCCL_FAIL = 25,
  ERROR_COMM_EMPTY = 28,
  // Beyond ATB's table: a peer that never answered, or died.
  ERROR_COMM_TIMEOUT = 100,
  ERROR_COMM_PEER_DIED = 101,
  ERROR_NCCL_FAIL = 102,
};

const char* statusName(Status s);

}  // namespace atb_ops

// Raises RuntimeError in Python whose message starts with the ATB error name,
// e.g. "ERROR_INVALID_PARAM: rankSize must be > 0, got 0".
#define ATB_CHECK(cond, status, ...) \
  TORCH_CHECK((cond), ::atb_ops::statusName(::atb_ops::Status::status), ": ", __VA_ARGS__)

#define ATB_FAIL(status, ...) ATB_CHECK(false, status, __VA_ARGS__)
