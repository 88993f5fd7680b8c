// ATB's C++ params -> the operator they create and its param object, one function per param type. The object has
// the fields of OperationTorch's set_param JSON (ATB's field names) and goes to the operator as it is (no text in
// between), so the C++ API builds exactly the operator the Python surfaces build, with the same checks (csrc/ops).
// Params of operators atb_ops does not emulate give a spec that says so; CreateOperation refuses them with
// ERROR_INVALID_PARAM naming the operator.
#pragma once

#include <atb/infer_op_params.h>
#include <nlohmann/json.hpp>

#include <string>

namespace atb_ops::atb_api {

struct OperationSpec {
  std::string name;         // ATB's operator name, e.g. "AllGatherOperation"
  nlohmann::json param;     // its param, as the object set_param's JSON parses to
  std::string notEmulated;  // non-empty: why atb_ops cannot run it
};

OperationSpec specOf(const atb::infer::AllGatherParam& p);
OperationSpec specOf(const atb::infer::AllGatherVParam& p);
OperationSpec specOf(const atb::infer::AllReduceParam& p);
OperationSpec specOf(const atb::infer::BroadcastParam& p);
OperationSpec specOf(const atb::infer::ReduceScatterParam& p);
OperationSpec specOf(const atb::infer::ReduceScatterVParam& p);
OperationSpec specOf(const atb::infer::LinearParallelParam& p);
OperationSpec specOf(const atb::infer::SendParam& p);
OperationSpec specOf(const atb::infer::RecvParam& p);
OperationSpec specOf(const atb::infer::AllToAllParam& p);
OperationSpec specOf(const atb::infer::AllToAllVParam& p);
OperationSpec specOf(const atb::infer::AllToAllVV2Param& p);
OperationSpec specOf(const atb::infer::ElewiseParam& p);
OperationSpec specOf(const atb::infer::TransdataParam& p);

}  // namespace atb_ops::atb_api
