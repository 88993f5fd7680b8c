// What ATB's C++ API reads of each operator's inputs beyond their device memory. ATB's HCCL runners read the count
// tensors of the V operators from hostData (AllToAllVV2: sendCounts, sdispls, recvCounts, rdispls; AllGatherV:
// sendCount, recvCounts, rdispls; ReduceScatterV: sendCounts, sdispls, recvCount) and use tensorForInferShape / y
// for its shape only; every other input is device data. Those operators' InferShape, which sees descriptions and
// no values, derives the output from the shape-only input as ATB does; the others' InferShape is the operator's own
// plan over memoryless tensors.
#pragma once

#include <atb/types.h>

#include <functional>
#include <string>
#include <vector>

#include "emulated/atb/tensor_views.h"

namespace atb_ops::atb_api {

struct OperatorIo {
  std::vector<DataSide> inputs;  // by input index; indices past the end are device data
  // Set for operators whose plan needs host values: the output descriptions from the input descriptions.
  std::function<atb::SVector<atb::TensorDesc>(const atb::SVector<atb::TensorDesc>&)> inferFromDescs;

  DataSide side(size_t input) const { return input < inputs.size() ? inputs[input] : DataSide::kDevice; }
};

const OperatorIo& operatorIo(const std::string& operatorName);

}  // namespace atb_ops::atb_api
