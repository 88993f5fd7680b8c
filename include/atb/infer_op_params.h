// The params of ATB's inference operators that atb_ops serves: every communication operator, LinearParallel,
// and Elewise / Transdata (ATB's example helpers, demo_util.h, use them). Names, fields, their order, types and
// defaults are ATB's (a program written for ATB compiles unchanged; checked by
// scripts/compile_check_vendor_headers.sh); the rsv arrays keep ATB's object sizes.
// Written for atb_ops from ATB's published interface.
#ifndef ATB_OPS_INCLUDE_ATB_INFER_OP_PARAMS_H
#define ATB_OPS_INCLUDE_ATB_INFER_OP_PARAMS_H

#include <acl/acl.h>
#include <hccl/hccl_types.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "svector.h"

namespace atb {
namespace infer {

// How the ranks of a communicator run: as processes, or as threads of one process.
enum CommMode : int {
  COMM_UNDEFINED = -1,
  COMM_MULTI_PROCESS,
  COMM_MULTI_THREAD,
};

// Common to the communication params below:
//   rank, rankSize, rankRoot: this rank, the number of ranks, the rank that makes the communicator's root info;
//   backend: "hccl" or "lccl" (where ATB accepts it);
//   hcclComm: a communicator made by the caller (HCCL's API), used as given and never destroyed; nullptr: the
//     operation makes its own from the fields above;
//   rankTableFile: an HCCL rank table (then the communicator comes from HcclCommInitClusterInfo);
//   commDomain: names the communicator among those of one job.

struct AllGatherParam {
  int rank = 0;
  int rankSize = 0;
  int rankRoot = 0;
  std::string backend = "hccl";
  HcclComm hcclComm = nullptr;
  CommMode commMode = COMM_MULTI_PROCESS;
  std::string rankTableFile;
  std::string commDomain;
  uint8_t rsv[64] = {0};
};

struct AllGatherVParam {
  int rank = -1;
  int rankSize = 0;
  int rankRoot = 0;
  std::string backend = "hccl";
  HcclComm hcclComm = nullptr;
  CommMode commMode = COMM_MULTI_PROCESS;
  std::string rankTableFile;
  std::string commDomain;
  uint8_t rsv[64] = {0};
};

inline bool operator==(const AllGatherVParam& left, const AllGatherVParam& right) {
  return left.rank == right.rank && left.rankSize == right.rankSize && left.rankRoot == right.rankRoot &&
         left.hcclComm == right.hcclComm && left.commMode == right.commMode && left.backend == right.backend &&
         left.rankTableFile == right.rankTableFile && left.commDomain == right.commDomain;
}

struct AllReduceParam {
  // quantType 1/2: the input is int8 with a scale (per tensor / per channel) and an offset.
  enum QuantType : int {
    QUANT_TYPE_UNQUANT = 0,
    QUANT_TYPE_UNDEFINED = 0,
    QUANT_TYPE_PER_TENSOR = 1,
    QUANT_TYPE_PER_CHANNEL = 2,
    QUANT_TYPE_MAX = 3,
  };
  int rank = 0;
  int rankSize = 0;
  int rankRoot = 0;
  std::string allReduceType = "sum";  // "sum", "prod", "max", "min"
  std::string backend = "hccl";
  HcclComm hcclComm = nullptr;
  CommMode commMode = COMM_MULTI_PROCESS;
  std::string rankTableFile;
  std::string commDomain;
  QuantType quantType = QUANT_TYPE_UNQUANT;
  aclDataType outDataType = ACL_DT_UNDEFINED;  // the output's dtype when quantType is set
  uint8_t rsv[64] = {0};
};

struct BroadcastParam {
  int rank = 0;
  int rankSize = 0;
  int rankRoot = 0;
  HcclComm hcclComm = nullptr;
  CommMode commMode = COMM_MULTI_PROCESS;
  std::string backend = "hccl";
  std::string rankTableFile;
  std::string commDomain;
  uint8_t rsv[64] = {0};
};

struct ReduceScatterParam {
  int rank = 0;
  int rankSize = 0;
  int rankRoot = 0;
  std::string reduceType = "sum";
  HcclComm hcclComm = nullptr;
  CommMode commMode = COMM_MULTI_PROCESS;
  std::string backend = "lccl";
  std::string rankTableFile;
  std::string commDomain;
  uint8_t rsv[64] = {0};
};

struct ReduceScatterVParam {
  int rank = 0;
  int rankSize = 0;
  int rankRoot = 0;
  std::vector<int64_t> sendCounts;
  std::vector<int64_t> sdispls;
  std::int64_t recvCount = 0;
  std::string reduceType = "sum";
  HcclComm hcclComm = nullptr;
  CommMode commMode = COMM_MULTI_PROCESS;
  std::string backend = "hccl";
  std::string rankTableFile;
  std::string commDomain;
  uint8_t rsv[64] = {0};
};

inline bool operator==(const ReduceScatterVParam& left, const ReduceScatterVParam& right) {
  return left.rank == right.rank && left.rankSize == right.rankSize && left.rankRoot == right.rankRoot &&
         left.sendCounts == right.sendCounts && left.sdispls == right.sdispls && left.recvCount == right.recvCount &&
         left.reduceType == right.reduceType && left.hcclComm == right.hcclComm && left.commMode == right.commMode &&
         left.backend == right.backend && left.rankTableFile == right.rankTableFile &&
         left.commDomain == right.commDomain;
}

struct LinearParallelParam {
  enum ParallelType : int {
    UNDEFINED = -1,
    LINEAR_ALL_REDUCE = 0,
    LINEAR_REDUCE_SCATTER = 1,
    ALL_GATHER_LINEAR = 2,
    PURE_LINEAR = 3,
    ALL_GATHER_LINEAR_REDUCE_SCATTER = 4,
    ALLTOALLVC_ALL_GATHER_GMM = 5,
    GMM_REDUCE_SCATTER_ALLTOALLVC = 6,
    MAX = 7,
  };
  enum QuantType : int {
    QUANT_TYPE_UNDEFINED = -1,
    QUANT_TYPE_UNQUANT = -1,
    QUANT_TYPE_PER_TENSOR = 0,
    QUANT_TYPE_PER_CHANNEL = 1,
    QUANT_TYPE_PER_GROUP = 2,
    QUANT_TYPE_PER_TOKEN = 3,
    QUANT_TYPE_MAX = 4,
  };
  bool transWeight = true;
  int rank = 0;
  int rankSize = 0;
  int rankRoot = 0;
  bool hasResidual = false;
  std::string backend = "hccl";
  HcclComm hcclComm = nullptr;
  CommMode commMode = COMM_MULTI_PROCESS;
  std::string rankTableFile;
  ParallelType type = LINEAR_ALL_REDUCE;
  bool keepIntermediate = false;
  QuantType quantType = QUANT_TYPE_UNQUANT;
  int32_t quantGroupSize = 0;
  aclDataType outDataType = ACL_DT_UNDEFINED;
  std::string commDomain;
  // Two-dimensional tensor parallelism (ALL_GATHER_LINEAR_REDUCE_SCATTER): the all-gather and reduce-scatter
  // group sizes, and which of them is the inner dimension.
  struct TwoDimTPInfo {
    uint16_t agDim = 0;
    uint16_t rsDim = 0;
    uint8_t innerDimIsAg = 1;
    uint8_t rsv[3] = {0};
  };
  TwoDimTPInfo twoDimTPInfo;
  // Expert parallelism (types 5 and 6).
  struct MoeInfo {
    int16_t localExpertNums = 1;
    int8_t epSize = 1;
    int8_t tpSize = 1;
  };
  MoeInfo moeInfo;
  uint8_t rsv[52] = {0};
};

struct SendParam {
  int rank = 0;
  int rankSize = 0;
  int rankRoot = 0;
  uint32_t destRank = 1;
  std::string backend = "hccl";
  HcclComm hcclComm = nullptr;
  CommMode commMode = COMM_MULTI_PROCESS;
  std::string rankTableFile;
  std::string commDomain;
  uint8_t rsv[64] = {0};
};

struct RecvParam {
  int rank = 0;
  int rankSize = 0;
  int rankRoot = 0;
  uint32_t srcRank = 1;
  std::string backend = "hccl";
  HcclComm hcclComm = nullptr;
  CommMode commMode = COMM_MULTI_PROCESS;
  std::string rankTableFile;
  std::string commDomain;
  uint8_t rsv[64] = {0};
};

struct AllToAllParam {
  int rank = 0;
  int rankSize = 0;
  int rankRoot = 0;
  std::string backend = "hccl";
  HcclComm hcclComm = nullptr;
  CommMode commMode = COMM_MULTI_PROCESS;
  std::string rankTableFile;
  std::string commDomain;
  bool transpose = false;  // lccl: the chunks are column blocks of a 2-D input
  uint8_t rsv[62] = {0};
};

struct AllToAllVParam {
  int rank = 0;
  int rankSize = 0;
  int rankRoot = 0;
  std::vector<int64_t> sendCounts;
  std::vector<int64_t> sdispls;
  std::vector<int64_t> recvCounts;
  std::vector<int64_t> rdispls;
  std::string backend = "hccl";
  HcclComm hcclComm = nullptr;
  CommMode commMode = COMM_MULTI_PROCESS;
  std::string rankTableFile;
  std::string commDomain;
  uint8_t rsv[64] = {0};
};

// The counts and displacements come with each call, as tensors (their hostData is read).
struct AllToAllVV2Param {
  int rank = -1;
  int rankSize = 0;
  int rankRoot = 0;
  std::string backend = "hccl";
  HcclComm hcclComm = nullptr;
  CommMode commMode = COMM_MULTI_PROCESS;
  std::string rankTableFile;
  std::string commDomain;
  uint8_t rsv[64] = {0};
};

inline bool operator==(const AllToAllVV2Param& left, const AllToAllVV2Param& right) {
  return left.rank == right.rank && left.rankSize == right.rankSize && left.rankRoot == right.rankRoot &&
         left.hcclComm == right.hcclComm && left.commMode == right.commMode && left.backend == right.backend &&
         left.rankTableFile == right.rankTableFile && left.commDomain == right.commDomain;
}

struct ElewiseParam {
  enum ElewiseType : int {
    ELEWISE_UNDEFINED = 0,
    ELEWISE_CAST,
    ELEWISE_MULS,
    ELEWISE_COS,
    ELEWISE_SIN,
    ELEWISE_NEG,
    ELEWISE_QUANT,
    ELEWISE_LOGICAL_NOT,
    ELEWISE_ADD,
    ELEWISE_MUL,
    ELEWISE_REALDIV,
    ELEWISE_LOGICAL_AND,
    ELEWISE_LOGICAL_OR,
    ELEWISE_LESS,
    ELEWISE_GREATER,
    ELEWISE_SUB,
    ELEWISE_EQUAL,
    ELEWISE_QUANT_PER_CHANNEL,
    ELEWISE_DEQUANT_PER_CHANNEL,
    ELEWISE_DYNAMIC_QUANT,
    ELEWISE_TANH,
    ELEWISE_TYPE_MAX
  };
  struct QuantParam {
    float inputScale = 1.0f;
    bool asymmetric = false;
    int inputOffset = 0;
    uint8_t rsv[20] = {0};
  };
  struct MulsParam {
    float varAttr = 0.0f;
    uint8_t rsv[12] = {0};
  };
  ElewiseType elewiseType = ELEWISE_UNDEFINED;
  QuantParam quantParam;
  MulsParam mulsParam;
  aclDataType outTensorType = ACL_DT_UNDEFINED;  // ELEWISE_CAST: the output's dtype
  uint8_t rsv[8] = {0};
};

struct TransdataParam {
  enum TransdataType : int { UNDEFINED = 0, FRACTAL_NZ_TO_ND, ND_TO_FRACTAL_NZ };
  TransdataType transdataType = UNDEFINED;
  SVector<int64_t> outCrops = {0, 0};
  uint8_t rsv[8] = {0};
};

}  // namespace infer
}  // namespace atb

#endif  // ATB_OPS_INCLUDE_ATB_INFER_OP_PARAMS_H
