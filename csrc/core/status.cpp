#include "core/status.h"

namespace atb_ops {

const char* statusName(Status s) {
  switch (s) {
    case Status::NO_ERROR: return "NO_ERROR";
    case Status::ERROR_INVALID_PARAM: return "ERROR_INVALID_PARAM";
    case Status::ERROR_INVALID_GRAPH: return "ERROR_INVALID_GRAPH";
    case Status::ERROR_INTERNAL_ERROR: return "ERROR_INTERNAL_ERROR";
    case Status::ERROR_RT_FAIL: return "ERROR_RT_FAIL";
    case Status::ERROR_INVALID_IN_TENSOR_NUM: return "ERROR_INVALID_IN_TENSOR_NUM";
    case Status::ERROR_INVALID_TENSOR_DTYPE: return "ERROR_INVALID_TENSOR_DTYPE";
    case Status::ERROR_INVALID_TENSOR_FORMAT: return "ERROR_INVALID_TENSOR_FORMAT";
    case Status::ERROR_INVALID_TENSOR_DIM: return "ERROR_INVALID_TENSOR_DIM";
    case Status::ERROR_INVALID_TENSOR_SIZE: return "ERROR_INVALID_TENSOR_SIZE";
    case Status::ERROR_OPERATION_NULL_RUNNER: return "ERROR_OPERATION_NULL_RUNNER";
    case Status::ERROR_INVALID_TENSOR_INI_MATCH: return "ERROR_INVALID_TENSOR_INI_MATCH";
    case Status::ERROR_INVALID_TENSOR_DIM_NUM: return "ERROR_INVALID_TENSOR_DIM_NUM";
    case Status::ERROR_HCCL_FAIL: return "ERROR_HCCL_FAIL";
    case Status::ERROR_COMM_EMPTY: return "ERROR_COMM_EMPTY";
    case Status::ERROR_COMM_TIMEOUT: return "ERROR_COMM_TIMEOUT";
    case Status::ERROR_COMM_PEER_DIED: return "ERROR_COMM_PEER_DIED";
    case Status::ERROR_NCCL_FAIL: return "ERROR_NCCL_FAIL";
    case Status::ERROR_INTERRUPTED: return "ERROR_INTERRUPTED";
    case Status::ERROR_COMM_PEER_LEFT: return "ERROR_COMM_PEER_LEFT";
  }
  return "ERROR_UNKNOWN";
}

bool isCommunicatorFault(Status s) {
  switch (s) {
    case Status::ERROR_RT_FAIL:
    case Status::ERROR_HCCL_FAIL:
    case Status::ERROR_COMM_TIMEOUT:
    case Status::ERROR_COMM_PEER_DIED:
    case Status::ERROR_NCCL_FAIL:
    case Status::ERROR_INTERRUPTED:
    case Status::ERROR_COMM_PEER_LEFT: return true;
    default: return false;
  }
}

namespace detail {

void raise(Status status, const char* func, const char* file, uint32_t line, const std::string& message) {
  throw StatusError(status, func, file, line, std::string(statusName(status)) + ": " + message);
}

}  // namespace detail
}  // namespace atb_ops
