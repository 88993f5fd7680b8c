#include "emulated/atb/operator_io.h"

#include <map>

#include "emulated/atb/api_error.h"

namespace atb_ops::atb_api {
namespace {

constexpr DataSide kDev = DataSide::kDevice;
constexpr DataSide kHost = DataSide::kHost;
constexpr DataSide kShape = DataSide::kShapeOnly;

// x's description with its dims replaced.
atb::TensorDesc withDims(const atb::TensorDesc& x, std::initializer_list<int64_t> dims) {
  atb::TensorDesc out = x;
  out.shape.dimNum = dims.size();
  size_t i = 0;
  for (int64_t d : dims) out.shape.dims[i++] = d;
  return out;
}

const std::map<std::string, OperatorIo>& table() {
  static const auto* t = new std::map<std::string, OperatorIo>{
      // x, sendCounts, sdispls, recvCounts, rdispls, tensorForInferShape -> [1, len(tensorForInferShape)]
      {"AllToAllVV2Operation",
       {{kDev, kHost, kHost, kHost, kHost, kShape},
        [](const atb::SVector<atb::TensorDesc>& in) {
          return atb::SVector<atb::TensorDesc>{withDims(in.at(0), {1, in.at(5).shape.dims[0]})};
        }}},
      // x, sendCount, recvCounts, rdispls, y -> x's shape with dim 0 = len(y)
      {"AllGatherVOperation",
       {{kDev, kHost, kHost, kHost, kShape},
        [](const atb::SVector<atb::TensorDesc>& in) {
          atb::TensorDesc out = in.at(0);
          out.shape.dims[0] = in.at(4).shape.dims[0];
          return atb::SVector<atb::TensorDesc>{out};
        }}},
      // x [rows, cols], sendCounts, sdispls, recvCount, y -> [len(y), cols]
      {"ReduceScatterVOperation",
       {{kDev, kHost, kHost, kHost, kShape},
        [](const atb::SVector<atb::TensorDesc>& in) {
          ATB_API_CHECK(in.at(0).shape.dimNum == 2, ERROR_INVALID_TENSOR_DIM_NUM,
                        "ReduceScatterVOperation input x must be 2-D, got dimNum ", in.at(0).shape.dimNum);
          return atb::SVector<atb::TensorDesc>{withDims(in.at(0), {in.at(4).shape.dims[0], in.at(0).shape.dims[1]})};
        }}},
  };
  return *t;
}

}  // namespace

const OperatorIo& operatorIo(const std::string& operatorName) {
  static const OperatorIo deviceOnly;
  const auto it = table().find(operatorName);
  return it == table().end() ? deviceOnly : it->second;
}

}  // namespace atb_ops::atb_api
