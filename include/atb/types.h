// ATB's basic types: Status and its codes, tensors and variant packs. Written for atb_ops from ATB's published
// interface (names, fields, defaults, values, layouts; checked by scripts/compile_check_vendor_headers.sh).
#ifndef ATB_OPS_INCLUDE_ATB_TYPES_H
#define ATB_OPS_INCLUDE_ATB_TYPES_H

#include <acl/acl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "svector.h"

// atb_ops' libatb.so is built with torch's C++ ABI (the new std::string): a program built with the old one would pass
// params whose strings have another layout, so it is stopped here. ATB's build.sh passes torch's choice (1).
#if defined(__GLIBCXX__) && defined(_GLIBCXX_USE_CXX11_ABI) && !_GLIBCXX_USE_CXX11_ABI
#error "atb_ops' libatb.so is built with -D_GLIBCXX_USE_CXX11_ABI=1 (torch's ABI); build this program with it too"
#endif

namespace atb {

// Every ATB function returns one: NO_ERROR (0) or an ErrorType.
using Status = int32_t;

constexpr uint32_t MAX_DIM = 8;

enum ErrorType : int {
  NO_ERROR = 0,
  ERROR_INVALID_PARAM,
  ERROR_INVALID_GRAPH,
  ERROR_INTERNAL_ERROR,
  ERROR_RT_FAIL,
  ERROR_INVALID_IN_TENSOR_NUM,
  ERROR_INVALID_TENSOR_DTYPE,
  ERROR_INVALID_TENSOR_FORMAT,
  ERROR_INVALID_TENSOR_DIM,
  ERROR_INVALID_TENSOR_SIZE,
  ERROR_OPERATION_NULL_RUNNER,
  ERROR_GRAPH_INFERSHAPE_FUNC_FAIL,
  ERROR_CANN_ERROR,
  ERROR_INVALID_TENSOR_INI_MATCH,
  ERROR_INVALID_TENSOR_ADDR,
  ERROR_INVALID_TENSOR_NUM,
  ERROR_INVALID_TENSOR_DIM_NUM,
  ERROR_INVALID_SINGLE_OPERATION_PARAM,
  ERROR_GRAPH_NODE_RESHAPE_FUNC_FAIL,
  ERROR_INVALID_GRAPH_NODE_CHUNK,
  ERROR_INVALID_CONTEXT_ADDR,
  ERROR_INVALID_STREAM,
  ERROR_INVALID_WORKSPACE_SIZE,
  ERROR_INVALID_WORKSPACE_ADDR,
  ERROR_INVALID_OPERATION_ADDR,
  ERROR_HCCL_FAIL,
  ERROR_OUT_OF_DEVICE_MEMORY,
  ERROR_OUT_OF_HOST_MEMORY,
  ERROR_COMM_EMPTY,
  ERROR_COPY_HOST_MEMORY_FAIL
};

enum class LogLevel : int { DEBUG = 0, INFO, WARN, ERROR, NONE };

// A shape: the first dimNum entries of dims.
struct Dims {
  int64_t dims[MAX_DIM];
  uint64_t dimNum = 0;
};

struct TensorDesc {
  aclDataType dtype = ACL_DT_UNDEFINED;
  aclFormat format = ACL_FORMAT_UNDEFINED;
  Dims shape;
};

// deviceData: the tensor's memory (from aclrtMalloc); hostData: a host copy where an operator reads values on
// the host (AllToAllVV2's counts); dataSize: bytes.
struct Tensor {
  TensorDesc desc;
  void* deviceData = nullptr;
  void* hostData = nullptr;
  uint64_t dataSize = 0;
};

struct VariantPack {
  SVector<Tensor> inTensors;
  SVector<Tensor> outTensors;
};

}  // namespace atb

#endif  // ATB_OPS_INCLUDE_ATB_TYPES_H
