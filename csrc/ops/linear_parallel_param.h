// ATB's LinearParallelParam (include/atb/infer_op_params.h): its fields, defaults and enum values, the JSON
// reader of set_param, and ATB's creation checks (CreateOperation plus its lcoc / mc2 checks). The C++ API
// (atb::CreateOperation) fills this struct field by field and calls validateLinearParallelParam, so both
// surfaces build the same operation with the same checks.
#pragma once

#include <cstdint>
#include <string>

#include "core/acl_codes.h"
#include "core/json_fields.h"
#include "core/params.h"

namespace atb_ops {

struct LinearParallelParam {
  // ATB's ParallelType values.
  enum ParallelType : int32_t {
    UNDEFINED = -1,
    LINEAR_ALL_REDUCE = 0,                 // x @ w, all-reduce
    LINEAR_REDUCE_SCATTER = 1,             // x @ w, reduce-scatter along dim 0
    ALL_GATHER_LINEAR = 2,                 // all-gather x along dim 0, then x @ w
    PURE_LINEAR = 3,                       // x @ w, no communication
    ALL_GATHER_LINEAR_REDUCE_SCATTER = 4,  // all-gather in the ag group, x @ w, reduce-scatter in the rs group
    ALLTOALLVC_ALL_GATHER_GMM = 5,         // MoE dispatch: AllToAllvc (+ AllGather over TP), grouped matmul
    GMM_REDUCE_SCATTER_ALLTOALLVC = 6,     // MoE combine: grouped matmul (+ ReduceScatter over TP), AllToAllvc
    MAX = 7,
  };
  // ATB's QuantType values (UNDEFINED and UNQUANT are both -1 in ATB).
  enum QuantType : int32_t {
    QUANT_TYPE_UNQUANT = -1,
    QUANT_TYPE_PER_TENSOR = 0,
    QUANT_TYPE_PER_CHANNEL = 1,
    QUANT_TYPE_PER_GROUP = 2,
    QUANT_TYPE_PER_TOKEN = 3,
    QUANT_TYPE_MAX = 4,
  };
  struct TwoDimTPInfo {
    uint16_t agDim = 0;        // ranks of an all-gather group
    uint16_t rsDim = 0;        // ranks of a reduce-scatter group
    uint8_t innerDimIsAg = 1;  // 1: the ag group is consecutive ranks; 0: the rs group is
  };
  struct MoeInfo {
    int16_t localExpertNums = 1;  // experts per rank
    int8_t epSize = 1;            // expert-parallel group size
    int8_t tpSize = 1;            // tensor-parallel group size
  };

  CommParam comm = defaultComm();  // rank, rankSize, rankRoot, backend, hcclComm, commMode, rankTableFile, commDomain
  bool transWeight = true;         // weight is [n, k] (true) or [k, n]
  bool hasResidual = false;
  ParallelType type = LINEAR_ALL_REDUCE;
  bool keepIntermediate = false;  // ALL_GATHER_LINEAR: also output the gathered x
  QuantType quantType = QUANT_TYPE_UNQUANT;
  int32_t quantGroupSize = 0;
  int32_t outDataType = acl::kDtUndefined;  // aclDataType; ACL_DT_UNDEFINED: the input's dtype
  TwoDimTPInfo twoDimTPInfo;
  MoeInfo moeInfo;

  // ATB's LinearParallelParam defaults rank to 0 (the communication params to -1).
  static CommParam defaultComm() {
    CommParam p;
    p.rank = 0;
    return p;
  }

  bool isMoe() const { return type == ALLTOALLVC_ALL_GATHER_GMM || type == GMM_REDUCE_SCATTER_ALLTOALLVC; }
  // ATB's hccl / lccl runner: a matmul, an all-reduce and the residual, whatever `type` says.
  bool graphRunner() const { return comm.backend == "hccl" || comm.backend == "lccl"; }
  // Whether the quantised inputs are taken (ATB: lcoc / mc2 only, every type but 4).
  bool isQuant() const {
    return !graphRunner() && type != ALL_GATHER_LINEAR_REDUCE_SCATTER && quantType > QUANT_TYPE_UNQUANT &&
           quantType < QUANT_TYPE_MAX;
  }
  // ATB's GetInputNum / GetOutputNum.
  size_t inputNum() const;
  size_t outputNum() const { return keepIntermediate ? 2 : 1; }
};

constexpr const char* kLinearParallelName = "LinearParallelOperation";

// The backends LinearParallelOperation takes: ATB's (hccl, lccl, lcoc, mc2) and atb_ops' own (nccl, shm,
// gloo, auto), which run every type as lcoc does.
bool isLinearParallelBackend(const std::string& backend);

// Reads set_param's JSON (ATB's test-framework keys; twoDimTPInfo and moeInfo are nested objects); unknown
// keys are an error. Validates with validateLinearParallelParam.
LinearParallelParam readLinearParallelParam(const nlohmann::json& param);

// ATB's creation checks, raising ERROR_INVALID_PARAM that names the field and its value.
void validateLinearParallelParam(const LinearParallelParam& p);

// The common fields the communicator is made from: lcoc and mc2 (ATB's fused kernels over LCCL / HCCL) run
// on the HCCL backend, or on the device's own where there is none.
CommParam communicatorParam(const LinearParallelParam& p);

}  // namespace atb_ops
