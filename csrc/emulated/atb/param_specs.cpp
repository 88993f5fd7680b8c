#include "emulated/atb/param_specs.h"

#include <cstdint>
#include <vector>

namespace atb_ops::atb_api {
namespace {

using nlohmann::json;

// The fields every communication param has, under ATB's JSON names. hcclComm travels as the handle's number (0:
// none), and rsv as its bytes, which the operators check are all zero.
template <typename Param>
json commFields(const Param& p) {
  return json{{"rank", p.rank},
              {"rankSize", p.rankSize},
              {"rankRoot", p.rankRoot},
              {"backend", p.backend},
              {"hcclComm", static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p.hcclComm))},
              {"commMode", static_cast<int>(p.commMode)},
              {"rankTableFile", p.rankTableFile},
              {"commDomain", p.commDomain},
              {"rsv", std::vector<int>(std::begin(p.rsv), std::end(p.rsv))}};
}

OperationSpec spec(const char* name, json param) {
  return OperationSpec{name, std::move(param), ""};
}

const char* elewiseTypeName(int type) {
  static const char* const names[] = {"ELEWISE_UNDEFINED",
                                      "ELEWISE_CAST",
                                      "ELEWISE_MULS",
                                      "ELEWISE_COS",
                                      "ELEWISE_SIN",
                                      "ELEWISE_NEG",
                                      "ELEWISE_QUANT",
                                      "ELEWISE_LOGICAL_NOT",
                                      "ELEWISE_ADD",
                                      "ELEWISE_MUL",
                                      "ELEWISE_REALDIV",
                                      "ELEWISE_LOGICAL_AND",
                                      "ELEWISE_LOGICAL_OR",
                                      "ELEWISE_LESS",
                                      "ELEWISE_GREATER",
                                      "ELEWISE_SUB",
                                      "ELEWISE_EQUAL",
                                      "ELEWISE_QUANT_PER_CHANNEL",
                                      "ELEWISE_DEQUANT_PER_CHANNEL",
                                      "ELEWISE_DYNAMIC_QUANT",
                                      "ELEWISE_TANH"};
  return type >= 0 && type < static_cast<int>(std::size(names)) ? names[type] : "an unknown ElewiseType";
}

}  // namespace

OperationSpec specOf(const atb::infer::AllGatherParam& p) {
  return spec("AllGatherOperation", commFields(p));
}

OperationSpec specOf(const atb::infer::AllGatherVParam& p) {
  return spec("AllGatherVOperation", commFields(p));
}

OperationSpec specOf(const atb::infer::AllReduceParam& p) {
  json j = commFields(p);
  j["allReduceType"] = p.allReduceType;
  j["quantType"] = static_cast<int>(p.quantType);
  j["outDataType"] = static_cast<int>(p.outDataType);
  return spec("AllReduceOperation", std::move(j));
}

OperationSpec specOf(const atb::infer::BroadcastParam& p) {
  return spec("BroadcastOperation", commFields(p));
}

OperationSpec specOf(const atb::infer::ReduceScatterParam& p) {
  json j = commFields(p);
  j["reduceType"] = p.reduceType;
  return spec("ReduceScatterOperation", std::move(j));
}

OperationSpec specOf(const atb::infer::ReduceScatterVParam& p) {
  json j = commFields(p);
  j["sendCounts"] = p.sendCounts;
  j["sdispls"] = p.sdispls;
  j["recvCount"] = p.recvCount;
  j["reduceType"] = p.reduceType;
  return spec("ReduceScatterVOperation", std::move(j));
}

OperationSpec specOf(const atb::infer::LinearParallelParam& p) {
  json j = commFields(p);
  j["transWeight"] = p.transWeight;
  j["hasResidual"] = p.hasResidual;
  j["type"] = static_cast<int>(p.type);
  j["keepIntermediate"] = p.keepIntermediate;
  j["quantType"] = static_cast<int>(p.quantType);
  j["quantGroupSize"] = p.quantGroupSize;
  j["outDataType"] = static_cast<int>(p.outDataType);
  j["twoDimTPInfo"] = json{{"agDim", p.twoDimTPInfo.agDim},
                           {"rsDim", p.twoDimTPInfo.rsDim},
                           {"innerDimIsAg", p.twoDimTPInfo.innerDimIsAg != 0}};
  j["moeInfo"] =
      json{{"localExpertNums", p.moeInfo.localExpertNums}, {"epSize", p.moeInfo.epSize}, {"tpSize", p.moeInfo.tpSize}};
  return spec("LinearParallelOperation", std::move(j));
}

OperationSpec specOf(const atb::infer::SendParam& p) {
  json j = commFields(p);
  j["destRank"] = p.destRank;
  return spec("SendOperation", std::move(j));
}

OperationSpec specOf(const atb::infer::RecvParam& p) {
  json j = commFields(p);
  j["srcRank"] = p.srcRank;
  return spec("RecvOperation", std::move(j));
}

OperationSpec specOf(const atb::infer::AllToAllParam& p) {
  json j = commFields(p);
  j["transpose"] = p.transpose;
  return spec("AllToAllOperation", std::move(j));
}

OperationSpec specOf(const atb::infer::AllToAllVParam& p) {
  json j = commFields(p);
  j["sendCounts"] = p.sendCounts;
  j["sdispls"] = p.sdispls;
  j["recvCounts"] = p.recvCounts;
  j["rdispls"] = p.rdispls;
  return spec("AllToAllVOperation", std::move(j));
}

OperationSpec specOf(const atb::infer::AllToAllVV2Param& p) {
  return spec("AllToAllVV2Operation", commFields(p));
}

// Of ATB's element-wise operators only the cast runs here: ATB's example helpers (demo_util.h) cast host data to
// float16 / bfloat16 with it before every communication demo.
OperationSpec specOf(const atb::infer::ElewiseParam& p) {
  OperationSpec s = spec("ElewiseOperation", json{{"elewiseType", static_cast<int>(p.elewiseType)},
                                                  {"outTensorType", static_cast<int>(p.outTensorType)}});
  if (p.elewiseType != atb::infer::ElewiseParam::ELEWISE_CAST) {
    s.notEmulated = std::string("ElewiseOperation with elewiseType ") + std::to_string(p.elewiseType) + " (" +
                    elewiseTypeName(p.elewiseType) +
                    ") is not emulated: atb_ops runs ATB's communication operators and ELEWISE_CAST (1) only";
  }
  return s;
}

OperationSpec specOf(const atb::infer::TransdataParam& p) {
  OperationSpec s = spec("TransdataOperation", json{{"transdataType", static_cast<int>(p.transdataType)}});
  s.notEmulated =
      "TransdataOperation is not emulated: atb_ops keeps tensors in ND (row-major) only; blocked formats such as "
      "FRACTAL_NZ are not emulated";
  return s;
}

}  // namespace atb_ops::atb_api
