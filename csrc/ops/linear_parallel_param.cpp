#include "ops/linear_parallel_param.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "comm/comm_config.h"
#include "core/options.h"
#include "core/status.h"

namespace atb_ops {
namespace {

constexpr int kMinLocalExperts = 1;
constexpr int kMaxLocalExperts = 16;
constexpr int kRsvBytes = 52;

template <typename T>
T narrow(JsonFields& f, const char* key, T fallback, const std::string& what) {
  const int64_t v = f.int64(key, fallback);
  ATB_CHECK(v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max(), ERROR_INVALID_PARAM, what, " '",
            key, "' is ", v, ", outside its type's range [", int64_t{std::numeric_limits<T>::min()}, ", ",
            int64_t{std::numeric_limits<T>::max()}, "]");
  return static_cast<T>(v);
}

const char* typeName(int32_t t) {
  switch (t) {
    case LinearParallelParam::LINEAR_ALL_REDUCE: return "LINEAR_ALL_REDUCE";
    case LinearParallelParam::LINEAR_REDUCE_SCATTER: return "LINEAR_REDUCE_SCATTER";
    case LinearParallelParam::ALL_GATHER_LINEAR: return "ALL_GATHER_LINEAR";
    case LinearParallelParam::PURE_LINEAR: return "PURE_LINEAR";
    case LinearParallelParam::ALL_GATHER_LINEAR_REDUCE_SCATTER: return "ALL_GATHER_LINEAR_REDUCE_SCATTER";
    case LinearParallelParam::ALLTOALLVC_ALL_GATHER_GMM: return "ALLTOALLVC_ALL_GATHER_GMM";
    case LinearParallelParam::GMM_REDUCE_SCATTER_ALLTOALLVC: return "GMM_REDUCE_SCATTER_ALLTOALLVC";
    default: return "unknown";
  }
}

// The checks ATB makes for backend "lcoc" (CheckType), which every atb_ops backend shares: they run the
// same fused semantics.
void checkFusedSemantics(const LinearParallelParam& p) {
  const std::string op = kLinearParallelName;
  ATB_CHECK(p.keepIntermediate == false || p.type == LinearParallelParam::ALL_GATHER_LINEAR, ERROR_INVALID_PARAM, op,
            " param 'keepIntermediate' is true with type ", p.type, " (", typeName(p.type),
            "); only ALL_GATHER_LINEAR (2) keeps its intermediate");
  ATB_CHECK(p.quantType != LinearParallelParam::QUANT_TYPE_PER_TOKEN || p.isMoe() ||
                p.type == LinearParallelParam::LINEAR_ALL_REDUCE,
            ERROR_INVALID_PARAM, op, " param 'quantType' 3 (per token) is supported by types LINEAR_ALL_REDUCE (0), ",
            "ALLTOALLVC_ALL_GATHER_GMM (5) and GMM_REDUCE_SCATTER_ALLTOALLVC (6), got type ", p.type, " (",
            typeName(p.type), ")");
  // ATB ignores quantType for type 4 (its kernel has no quantised form); here it is refused, not ignored.
  ATB_CHECK(p.type != LinearParallelParam::ALL_GATHER_LINEAR_REDUCE_SCATTER ||
                p.quantType == LinearParallelParam::QUANT_TYPE_UNQUANT,
            ERROR_INVALID_PARAM, op, " type ALL_GATHER_LINEAR_REDUCE_SCATTER (4) has no quantised form; 'quantType' ",
            "must be -1, got ", p.quantType);
  if (p.type == LinearParallelParam::ALL_GATHER_LINEAR_REDUCE_SCATTER) {
    const auto& t = p.twoDimTPInfo;
    ATB_CHECK(t.rsDim != 0 && t.agDim != 0, ERROR_INVALID_PARAM, op,
              " param 'twoDimTPInfo' needs agDim and rsDim > 0, ", "got agDim ", t.agDim, ", rsDim ", t.rsDim);
    ATB_CHECK(int64_t{t.agDim} * t.rsDim == p.comm.rankSize, ERROR_INVALID_PARAM, op,
              " param 'twoDimTPInfo': agDim * rsDim must equal rankSize, got ", t.agDim, " * ", t.rsDim,
              " != ", p.comm.rankSize);
    ATB_CHECK(t.innerDimIsAg <= 1, ERROR_INVALID_PARAM, op, " param 'twoDimTPInfo.innerDimIsAg' must be 0 or 1, got ",
              int{t.innerDimIsAg});
  }
  if (p.isMoe()) {
    const auto& m = p.moeInfo;
    ATB_CHECK(m.epSize >= 1 && m.tpSize >= 1 && int64_t{m.epSize} * m.tpSize == p.comm.rankSize, ERROR_INVALID_PARAM,
              op, " param 'moeInfo': epSize * tpSize must equal rankSize (both >= 1), got ", int{m.epSize}, " * ",
              int{m.tpSize}, " vs rankSize ", p.comm.rankSize);
    ATB_CHECK(m.localExpertNums >= kMinLocalExperts && m.localExpertNums <= kMaxLocalExperts, ERROR_INVALID_PARAM, op,
              " param 'moeInfo.localExpertNums' must be in [", kMinLocalExperts, ", ", kMaxLocalExperts, "], got ",
              m.localExpertNums);
    ATB_CHECK(p.quantType == LinearParallelParam::QUANT_TYPE_UNQUANT ||
                  p.quantType == LinearParallelParam::QUANT_TYPE_PER_CHANNEL ||
                  p.quantType == LinearParallelParam::QUANT_TYPE_PER_TOKEN,
              ERROR_INVALID_PARAM, op, " type ", p.type, " (", typeName(p.type),
              ") supports quantType -1 (none), 1 (per channel) and 3 (per token), got ", p.quantType);
  }
}

// ATB's hccl / lccl runner is a Linear node, an AllReduce node and an Add: it ignores type, quantType and
// keepIntermediate (and would then compute something else than asked). Here those are refused.
void checkGraphRunner(const LinearParallelParam& p) {
  const std::string op = kLinearParallelName;
  ATB_CHECK(p.type == LinearParallelParam::LINEAR_ALL_REDUCE, ERROR_INVALID_PARAM, op, " backend '", p.comm.backend,
            "' runs LINEAR_ALL_REDUCE (0) only (ATB's hccl/lccl runner is matmul + all-reduce), got type ", p.type,
            " (", typeName(p.type), "); use backend 'lcoc' for the other types");
  ATB_CHECK(p.quantType == LinearParallelParam::QUANT_TYPE_UNQUANT, ERROR_INVALID_PARAM, op, " backend '",
            p.comm.backend, "' does not quantise (ATB quantises on 'lcoc' and 'mc2'), got quantType ", p.quantType);
  ATB_CHECK(!p.keepIntermediate, ERROR_INVALID_PARAM, op, " backend '", p.comm.backend,
            "' has no intermediate output; 'keepIntermediate' needs backend 'lcoc' and type ALL_GATHER_LINEAR (2)");
}

// ATB's CheckTypeMc2.
void checkMc2(const LinearParallelParam& p) {
  const std::string op = kLinearParallelName;
  ATB_CHECK(!p.hasResidual, ERROR_INVALID_PARAM, op, " backend 'mc2' does not support hasResidual");
  ATB_CHECK(p.comm.commMode == CommMode::MULTI_THREAD, ERROR_INVALID_PARAM, op,
            " backend 'mc2' supports commMode 1 (multi-thread) only, got ", static_cast<int>(p.comm.commMode));
  ATB_CHECK(p.quantType == LinearParallelParam::QUANT_TYPE_UNQUANT, ERROR_INVALID_PARAM, op,
            " backend 'mc2' supports quantType -1 only, got ", p.quantType);
  ATB_CHECK(p.type == LinearParallelParam::LINEAR_REDUCE_SCATTER, ERROR_INVALID_PARAM, op,
            " backend 'mc2' supports type LINEAR_REDUCE_SCATTER (1) only, got ", p.type, " (", typeName(p.type), ")");
}

}  // namespace

size_t LinearParallelParam::inputNum() const {
  size_t n = hasResidual ? 3 : 2;
  if (isMoe()) n += 2;  // globalTokensPerExpertMatrix, maxOutputSize
  if (isQuant()) {
    n += isMoe() ? 1 : 2;  // MoE: deqScale; otherwise bias (dequant offset) and deqScale
    if (quantType == QUANT_TYPE_PER_TOKEN) n += 1;
  }
  return n;
}

// Every communication backend, and ATB's fused ones (lcoc, mc2), which run on hccl here.
const std::vector<std::string>& linearParallelBackends() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = backendNames();
    all.insert(all.begin() + 2, {"lcoc", "mc2"});
    return all;
  }();
  return names;
}

bool isLinearParallelBackend(const std::string& b) {
  const auto& names = linearParallelBackends();
  return std::find(names.begin(), names.end(), b) != names.end();
}

CommParam communicatorParam(const LinearParallelParam& p) {
  CommParam c = p.comm;
  if (c.backend == "lcoc" || c.backend == "mc2") c.backend = "hccl";
  return c;
}

void validateLinearParallelParam(const LinearParallelParam& p) {
  const std::string op = kLinearParallelName;
  ATB_CHECK(isLinearParallelBackend(p.comm.backend), ERROR_INVALID_PARAM, op, " param 'backend' is '", p.comm.backend,
            "'; expected ", listOfNames(linearParallelBackends()));
  validateCommParam(p.comm, op);
  checkBackendAvailable(communicatorParam(p).backend, readOptions(), op);
  const uint32_t size = static_cast<uint32_t>(p.comm.rankSize);
  ATB_CHECK(p.comm.backend != "lcoc" || (size & (size - 1)) == 0, ERROR_INVALID_PARAM, op,
            " backend 'lcoc' needs rankSize a power of 2, got ", p.comm.rankSize);
  ATB_CHECK(p.type > LinearParallelParam::UNDEFINED && p.type < LinearParallelParam::MAX, ERROR_INVALID_PARAM, op,
            " param 'type' is ", p.type, "; expected 0..6 (LINEAR_ALL_REDUCE .. GMM_REDUCE_SCATTER_ALLTOALLVC)");
  ATB_CHECK(p.quantType >= LinearParallelParam::QUANT_TYPE_UNQUANT && p.quantType < LinearParallelParam::QUANT_TYPE_MAX,
            ERROR_INVALID_PARAM, op, " param 'quantType' is ", p.quantType,
            "; expected -1 (none), 0 (per tensor), 1 (per channel), 2 (per group) or 3 (per token)");
  ATB_CHECK(p.quantGroupSize >= 0, ERROR_INVALID_PARAM, op, " param 'quantGroupSize' must be >= 0, got ",
            p.quantGroupSize);
  ATB_CHECK(p.quantType != LinearParallelParam::QUANT_TYPE_PER_GROUP || p.quantGroupSize > 0, ERROR_INVALID_PARAM, op,
            " quantType 2 (per group) needs 'quantGroupSize' > 0, got ", p.quantGroupSize);
  ATB_CHECK(p.outDataType == acl::kDtUndefined || p.outDataType == acl::kFloat16 || p.outDataType == acl::kBf16,
            ERROR_INVALID_PARAM, op, " param 'outDataType' is ", p.outDataType,
            "; expected -1 (ACL_DT_UNDEFINED), 1 (ACL_FLOAT16) or 27 (ACL_BF16)");
  if (p.graphRunner()) {
    checkGraphRunner(p);
    return;
  }
  if (p.comm.backend == "mc2") checkMc2(p);
  checkFusedSemantics(p);
}

LinearParallelParam readLinearParallelParam(const nlohmann::json& param) {
  const std::string what = std::string(kLinearParallelName) + " param";
  JsonFields f(param, what);
  LinearParallelParam p;
  p.comm = readCommParam(f, LinearParallelParam::defaultComm());
  p.transWeight = f.boolean("transWeight", p.transWeight);
  p.hasResidual = f.boolean("hasResidual", p.hasResidual);
  p.type = static_cast<LinearParallelParam::ParallelType>(f.int32("type", p.type));
  p.keepIntermediate = f.boolean("keepIntermediate", p.keepIntermediate);
  p.quantType = static_cast<LinearParallelParam::QuantType>(f.int32("quantType", p.quantType));
  p.quantGroupSize = f.int32("quantGroupSize", p.quantGroupSize);
  p.outDataType = f.int32("outDataType", p.outDataType);
  JsonFields two = f.object("twoDimTPInfo");
  p.twoDimTPInfo.agDim = narrow<uint16_t>(two, "agDim", p.twoDimTPInfo.agDim, what + " twoDimTPInfo");
  p.twoDimTPInfo.rsDim = narrow<uint16_t>(two, "rsDim", p.twoDimTPInfo.rsDim, what + " twoDimTPInfo");
  p.twoDimTPInfo.innerDimIsAg = two.boolean("innerDimIsAg", p.twoDimTPInfo.innerDimIsAg != 0) ? 1 : 0;
  two.checkUnknownKeys();
  JsonFields moe = f.object("moeInfo");
  p.moeInfo.localExpertNums = narrow<int16_t>(moe, "localExpertNums", p.moeInfo.localExpertNums, what + " moeInfo");
  p.moeInfo.epSize = narrow<int8_t>(moe, "epSize", p.moeInfo.epSize, what + " moeInfo");
  p.moeInfo.tpSize = narrow<int8_t>(moe, "tpSize", p.moeInfo.tpSize, what + " moeInfo");
  moe.checkUnknownKeys();
  // ATB's rsv[52] must stay zero.
  const std::vector<int64_t> rsv = f.int64Array("rsv", {});
  ATB_CHECK(rsv.size() <= kRsvBytes, ERROR_INVALID_PARAM, what, " 'rsv' has ", rsv.size(), " entries; at most ",
            kRsvBytes);
  for (int64_t v : rsv) ATB_CHECK(v == 0, ERROR_INVALID_PARAM, what, " 'rsv' must be all zeros, got ", v);
  f.checkUnknownKeys();
  validateLinearParallelParam(p);
  return p;
}

}  // namespace atb_ops
