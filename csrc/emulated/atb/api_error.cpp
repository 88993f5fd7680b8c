#include "emulated/atb/api_error.h"

#include <new>

#include "emulated/atb/log.h"

namespace atb_ops::atb_api {

std::string atbStatusName(atb::Status status) {
  switch (status) {
    case atb::NO_ERROR: return "NO_ERROR";
    case atb::ERROR_INVALID_PARAM: return "ERROR_INVALID_PARAM";
    case atb::ERROR_INVALID_GRAPH: return "ERROR_INVALID_GRAPH";
    case atb::ERROR_INTERNAL_ERROR: return "ERROR_INTERNAL_ERROR";
    case atb::ERROR_RT_FAIL: return "ERROR_RT_FAIL";
    case atb::ERROR_INVALID_IN_TENSOR_NUM: return "ERROR_INVALID_IN_TENSOR_NUM";
    case atb::ERROR_INVALID_TENSOR_DTYPE: return "ERROR_INVALID_TENSOR_DTYPE";
    case atb::ERROR_INVALID_TENSOR_FORMAT: return "ERROR_INVALID_TENSOR_FORMAT";
    case atb::ERROR_INVALID_TENSOR_DIM: return "ERROR_INVALID_TENSOR_DIM";
    case atb::ERROR_INVALID_TENSOR_SIZE: return "ERROR_INVALID_TENSOR_SIZE";
    case atb::ERROR_OPERATION_NULL_RUNNER: return "ERROR_OPERATION_NULL_RUNNER";
    case atb::ERROR_GRAPH_INFERSHAPE_FUNC_FAIL: return "ERROR_GRAPH_INFERSHAPE_FUNC_FAIL";
    case atb::ERROR_CANN_ERROR: return "ERROR_CANN_ERROR";
    case atb::ERROR_INVALID_TENSOR_INI_MATCH: return "ERROR_INVALID_TENSOR_INI_MATCH";
    case atb::ERROR_INVALID_TENSOR_ADDR: return "ERROR_INVALID_TENSOR_ADDR";
    case atb::ERROR_INVALID_TENSOR_NUM: return "ERROR_INVALID_TENSOR_NUM";
    case atb::ERROR_INVALID_TENSOR_DIM_NUM: return "ERROR_INVALID_TENSOR_DIM_NUM";
    case atb::ERROR_INVALID_SINGLE_OPERATION_PARAM: return "ERROR_INVALID_SINGLE_OPERATION_PARAM";
    case atb::ERROR_GRAPH_NODE_RESHAPE_FUNC_FAIL: return "ERROR_GRAPH_NODE_RESHAPE_FUNC_FAIL";
    case atb::ERROR_INVALID_GRAPH_NODE_CHUNK: return "ERROR_INVALID_GRAPH_NODE_CHUNK";
    case atb::ERROR_INVALID_CONTEXT_ADDR: return "ERROR_INVALID_CONTEXT_ADDR";
    case atb::ERROR_INVALID_STREAM: return "ERROR_INVALID_STREAM";
    case atb::ERROR_INVALID_WORKSPACE_SIZE: return "ERROR_INVALID_WORKSPACE_SIZE";
    case atb::ERROR_INVALID_WORKSPACE_ADDR: return "ERROR_INVALID_WORKSPACE_ADDR";
    case atb::ERROR_INVALID_OPERATION_ADDR: return "ERROR_INVALID_OPERATION_ADDR";
    case atb::ERROR_HCCL_FAIL: return "ERROR_HCCL_FAIL";
    case atb::ERROR_OUT_OF_DEVICE_MEMORY: return "ERROR_OUT_OF_DEVICE_MEMORY";
    case atb::ERROR_OUT_OF_HOST_MEMORY: return "ERROR_OUT_OF_HOST_MEMORY";
    case atb::ERROR_COMM_EMPTY: return "ERROR_COMM_EMPTY";
    case atb::ERROR_COPY_HOST_MEMORY_FAIL: return "ERROR_COPY_HOST_MEMORY_FAIL";
  }
  return "unknown status " + std::to_string(status);
}

// By name, not by number: atb_ops' statuses carry ATB's names (and mostly its numbers), so a code that is
// renumbered or added on either side still maps to the ATB code of the same name.
atb::Status toAtbStatus(atb_ops::Status status) {
  switch (status) {
    // A peer that never came or died, and an NCCL failure, are failures of the collective: what ATB reports when
    // HCCL fails.
    case atb_ops::Status::ERROR_COMM_TIMEOUT:
    case atb_ops::Status::ERROR_COMM_PEER_DIED:
    case atb_ops::Status::ERROR_COMM_PEER_LEFT:
    case atb_ops::Status::ERROR_NCCL_FAIL: return atb::ERROR_HCCL_FAIL;
    // A wait abandoned by a signal: the runtime's failure, not the caller's argument.
    case atb_ops::Status::ERROR_INTERRUPTED: return atb::ERROR_RT_FAIL;
    default: break;
  }
  const std::string name = atb_ops::statusName(status);
  for (atb::Status code = atb::NO_ERROR; code <= atb::ERROR_COPY_HOST_MEMORY_FAIL; ++code) {
    if (atbStatusName(code) == name) return code;
  }
  return atb::ERROR_INTERNAL_ERROR;
}

atb::Status statusOfCurrentException(const char* where) noexcept {
  atb::Status code = atb::ERROR_INTERNAL_ERROR;
  std::string message;
  try {
    throw;
  } catch (const ApiError& e) {
    code = e.status();
    message = e.what();
  } catch (const atb_ops::StatusError& e) {
    code = toAtbStatus(e.status());
    message = e.what_without_backtrace();
  } catch (const c10::Error& e) {
    message = std::string("ERROR_INTERNAL_ERROR: ") + e.what_without_backtrace();
  } catch (const std::bad_alloc&) {
    code = atb::ERROR_OUT_OF_HOST_MEMORY;
    message = "ERROR_OUT_OF_HOST_MEMORY: host memory is exhausted";
  } catch (const std::exception& e) {
    message = std::string("ERROR_INTERNAL_ERROR: ") + e.what();
  } catch (...) {
    message = "ERROR_INTERNAL_ERROR: an unknown exception";
  }
  try {
    logLine(atb::LogLevel::ERROR, std::string(where) + " failed (status " + std::to_string(code) + "): " + message);
  } catch (...) {
    // Logging must not throw out of the API either (a full disk, no memory): the code is returned regardless.
  }
  return code;
}

}  // namespace atb_ops::atb_api
