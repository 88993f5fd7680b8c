#include "emulated/atb/tensor_views.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <limits>

#include "emulated/acl/memory_query.h"
#include "emulated/atb/api_error.h"
#include "emulated/atb/dtypes.h"

namespace atb_ops::atb_api {
namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
  return "[" + c10::Join(", ", shape) + "]";
}

int64_t numelOf(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    ATB_API_CHECK(d == 0 || n <= std::numeric_limits<int64_t>::max() / d, ERROR_INVALID_TENSOR_SIZE, what, " shape ",
                  shapeText(shape), " has more elements than int64 counts");
    n *= d;
  }
  return n;
}

// deviceData must be inside one aclrtMalloc block of at least `bytes`: host memory, a freed block or a block that
// is too small would fault on an NPU (or corrupt memory here).
void checkDeviceMemory(const void* data, uint64_t bytes, const std::string& what) {
  switch (atbOpsAclMemoryKind(data, bytes)) {
    case kAtbOpsAclDevice: return;
    case kAtbOpsAclHost:
      ATB_API_FAIL(ERROR_INVALID_TENSOR_ADDR, what, ".deviceData ", data,
                   " is host memory (aclrtMallocHost); operators read device memory (aclrtMalloc)");
    case kAtbOpsAclOverrun:
      ATB_API_FAIL(ERROR_INVALID_TENSOR_ADDR, what, ".deviceData [", data, ", +", bytes,
                   ") runs past the end of its aclrtMalloc block");
    default:
      ATB_API_FAIL(ERROR_INVALID_TENSOR_ADDR, what, ".deviceData ", data,
                   " is not device memory from aclrtMalloc (host memory, or a block freed already)");
  }
}

at::Tensor wrap(void* data, const std::vector<int64_t>& shape, c10::ScalarType dtype) {
  return at::from_blob(data, shape, at::TensorOptions().dtype(dtype).device(c10::kCPU));
}

}  // namespace

std::vector<int64_t> checkedShape(const atb::TensorDesc& desc, const std::string& what) {
  const atb::Dims& s = desc.shape;
  // ATB's TensorCheck::CheckTensorShape: a dimNum outside (0, MAX_DIM] is ERROR_INVALID_TENSOR_DIM, and a size
  // Utils::GetTensorSize cannot give (a negative dimension, a dtype without a size) ERROR_INVALID_TENSOR_SIZE.
  ATB_API_CHECK(s.dimNum >= 1 && s.dimNum <= atb::MAX_DIM, ERROR_INVALID_TENSOR_DIM, what, " has dimNum ", s.dimNum,
                "; must be in [1, MAX_DIM=", atb::MAX_DIM, "]");
  std::vector<int64_t> shape(s.dims, s.dims + s.dimNum);
  for (size_t i = 0; i < shape.size(); ++i) {
    ATB_API_CHECK(shape[i] >= 0, ERROR_INVALID_TENSOR_SIZE, what, " dims[", i, "] is ", shape[i], " (shape ",
                  shapeText(shape), "); dimensions must be >= 0");
  }
  return shape;
}

c10::ScalarType checkedDtype(const atb::TensorDesc& desc, const std::string& what) {
  ATB_API_CHECK(elementBytes(desc.dtype) != 0, ERROR_INVALID_TENSOR_SIZE, what, " has dtype ", dtypeName(desc.dtype),
                ", which has no size (Utils::GetTensorSize is 0)");
  const std::optional<c10::ScalarType> dtype = scalarTypeOf(desc.dtype);
  ATB_API_CHECK(dtype.has_value(), ERROR_INVALID_TENSOR_DTYPE, what, " has dtype ", dtypeName(desc.dtype),
                "; atb_ops moves ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_INT8, ACL_INT16, ACL_INT32, "
                "ACL_INT64, ACL_UINT8 and ACL_BOOL");
  ATB_API_CHECK(isPlainFormat(desc.format), ERROR_INVALID_TENSOR_FORMAT, what, " has format ", formatName(desc.format),
                "; blocked formats are not emulated (ND and the other row-major ones are)");
  return *dtype;
}

at::Tensor viewOf(const atb::Tensor& tensor, DataSide side, const std::string& what) {
  const std::vector<int64_t> shape = checkedShape(tensor.desc, what);
  const c10::ScalarType dtype = checkedDtype(tensor.desc, what);
  const int64_t numel = numelOf(shape, what);
  const uint64_t itemBytes = elementBytes(tensor.desc.dtype);
  ATB_API_CHECK(static_cast<uint64_t>(numel) <= std::numeric_limits<uint64_t>::max() / itemBytes,
                ERROR_INVALID_TENSOR_SIZE, what, " shape ", shapeText(shape), " is too large");
  const uint64_t bytes = static_cast<uint64_t>(numel) * itemBytes;
  // ATB compares dataSize with the description's size at Execute and reports ERROR_INVALID_PARAM.
  ATB_API_CHECK(tensor.dataSize == bytes, ERROR_INVALID_PARAM, what, ".dataSize is ", tensor.dataSize,
                " bytes, but shape ", shapeText(shape), " of ", dtypeName(tensor.desc.dtype), " holds ", bytes,
                " bytes (Utils::GetTensorSize)");
  if (numel == 0 && tensor.deviceData == nullptr && tensor.hostData == nullptr) {
    return at::empty(shape, at::TensorOptions().dtype(dtype).device(c10::kCPU));
  }
  switch (side) {
    case DataSide::kDevice:
      ATB_API_CHECK(tensor.deviceData != nullptr, ERROR_INVALID_PARAM, what, ".deviceData is null (shape ",
                    shapeText(shape), ", ", bytes, " bytes)");
      checkDeviceMemory(tensor.deviceData, bytes, what);
      return wrap(tensor.deviceData, shape, dtype);
    case DataSide::kHost:
      ATB_API_CHECK(tensor.hostData != nullptr, ERROR_INVALID_PARAM, what,
                    ".hostData is null; the operator reads this tensor's values on the host, from hostData");
      ATB_API_CHECK(atbOpsAclMemoryKind(tensor.hostData, 1) != kAtbOpsAclDevice, ERROR_INVALID_TENSOR_ADDR, what,
                    ".hostData ", tensor.hostData, " is device memory (aclrtMalloc); the host cannot read it");
      return wrap(tensor.hostData, shape, dtype);
    case DataSide::kShapeOnly:
      if (tensor.deviceData != nullptr) {
        checkDeviceMemory(tensor.deviceData, bytes, what);
        return wrap(tensor.deviceData, shape, dtype);
      }
      ATB_API_CHECK(tensor.hostData != nullptr, ERROR_INVALID_PARAM, what, ".deviceData and .hostData are both null");
      return wrap(tensor.hostData, shape, dtype);
  }
  ATB_API_FAIL(ERROR_INTERNAL_ERROR, what, ": unknown data side");
}

at::Tensor metaOf(const atb::TensorDesc& desc, const std::string& what) {
  const std::vector<int64_t> shape = checkedShape(desc, what);
  const c10::ScalarType dtype = checkedDtype(desc, what);
  numelOf(shape, what);
  return at::empty(shape, at::TensorOptions().dtype(dtype).device(c10::kMeta));
}

atb::TensorDesc descOf(const atb_ops::TensorDesc& planned, aclFormat format) {
  atb::TensorDesc desc;
  desc.dtype = aclDataTypeOf(planned.dtype);
  desc.format = format;
  ATB_API_CHECK(planned.shape.size() <= atb::MAX_DIM, ERROR_INVALID_TENSOR_DIM_NUM, "an output of ",
                planned.shape.size(), " dimensions exceeds MAX_DIM=", atb::MAX_DIM);
  desc.shape.dimNum = planned.shape.size();
  for (size_t i = 0; i < planned.shape.size(); ++i) desc.shape.dims[i] = planned.shape[i];
  return desc;
}

}  // namespace atb_ops::atb_api
