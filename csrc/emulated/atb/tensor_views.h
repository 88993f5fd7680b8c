// atb::Tensor -> at::Tensor: a CPU tensor over the memory a program passes (no copy), after every check that keeps
// a bad tensor from becoming a crash or a silent misread: the shape (MAX_DIM, no negative dims), the dtype and
// format, dataSize against the shape, and the memory itself (deviceData must lie inside one aclrtMalloc block, as
// an NPU would fault on anything else; hostData must not be device memory).
#pragma once

#include <ATen/core/Tensor.h>
#include <atb/types.h>

#include <string>
#include <vector>

#include "core/tensor_checks.h"

namespace atb_ops::atb_api {

// Which of a tensor's pointers an operator reads.
enum class DataSide {
  kDevice,     // deviceData (the data every operator moves)
  kHost,       // hostData: values the operator reads on the host (ATB's count tensors, e.g. AllToAllVV2's)
  kShapeOnly,  // only the shape is used (AllToAllVV2's tensorForInferShape): either pointer may hold it
};

// The checked shape of `desc`; `what` names the tensor in messages ("AllGatherOperation inTensors[0]").
std::vector<int64_t> checkedShape(const atb::TensorDesc& desc, const std::string& what);
// The checked dtype of `desc`, as torch's.
c10::ScalarType checkedDtype(const atb::TensorDesc& desc, const std::string& what);

// A view of `tensor`'s memory on `side`, checked as above.
at::Tensor viewOf(const atb::Tensor& tensor, DataSide side, const std::string& what);
// A tensor with the shape and dtype of `desc` and no memory (the meta device), for InferShape.
at::Tensor metaOf(const atb::TensorDesc& desc, const std::string& what);

// An operator's planned output as ATB describes it, in `format`.
atb::TensorDesc descOf(const atb_ops::TensorDesc& planned, aclFormat format);

}  // namespace atb_ops::atb_api
