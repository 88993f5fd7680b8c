#include "ops/linear_parallel_plan.h"

#include <ATen/ATen.h>
#include <c10/util/StringUtil.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "core/acl_codes.h"
#include "core/status.h"

namespace atb_ops {
namespace {

using P = LinearParallelParam;
using c10::ScalarType;

constexpr const char* kOp = kLinearParallelName;
constexpr int64_t kMaxMoeOutputRows = 204800;  // ATB's MAX_OUTPUT_SIZE
constexpr int64_t kMaxMoeK = 24000;            // ATB's MAX_K
constexpr int64_t kMc2MinK = 256;              // mc2: k in [256, 65535)
constexpr int64_t kMc2MaxK = 65535;

// ATB's short dtype names (its ini tables and logs).
const char* dtypeName(ScalarType t) {
  switch (t) {
    case ScalarType::Half: return "float16";
    case ScalarType::BFloat16: return "bf16";
    case ScalarType::Float: return "float";
    case ScalarType::Char: return "int8";
    case ScalarType::Int: return "int32";
    case ScalarType::Long: return "int64";
    default: return c10::toString(t);
  }
}

LinearParallelInputs rolesOf(const P& p) {
  LinearParallelInputs r;
  int next = 2;
  if (p.isQuant()) {
    if (!p.isMoe()) r.bias = next++;
    r.scale = next++;
  }
  if (p.hasResidual) r.residual = next++;
  if (p.isQuant() && p.quantType == P::QUANT_TYPE_PER_TOKEN) r.tokenScale = next++;
  if (p.isMoe()) {
    r.matrix = next++;
    r.maxOutput = next++;
  }
  return r;
}

std::vector<std::pair<int, const char*>> namedRoles(const LinearParallelInputs& r) {
  std::vector<std::pair<int, const char*>> all = {{r.x, "x"},
                                                  {r.weight, "weight"},
                                                  {r.bias, "bias"},
                                                  {r.scale, "deqScale"},
                                                  {r.residual, "residual"},
                                                  {r.tokenScale, "perTokenScale"},
                                                  {r.matrix, "globalTokensPerExpertMatrix"},
                                                  {r.maxOutput, "maxOutputSize"}};
  std::vector<std::pair<int, const char*>> present;
  for (const auto& a : all) {
    if (a.first >= 0) present.push_back(a);
  }
  std::sort(present.begin(), present.end());
  return present;
}

std::string roleList(const LinearParallelInputs& r) {
  std::vector<std::string> names;
  for (const auto& a : namedRoles(r)) names.emplace_back(a.second);
  return c10::Join(", ", names);
}

std::string inputName(const LinearParallelInputs& r, int index) {
  for (const auto& a : namedRoles(r)) {
    if (a.first == index) return std::string("input ") + std::to_string(index) + " (" + a.second + ")";
  }
  return "input " + std::to_string(index);
}

// One row of ATB's dtype table (ops_configs/atb_ops_info.ini): the inputs in order, then the output.
struct DtypeRow {
  std::vector<ScalarType> in;
  ScalarType out;
};

// ATB's supported dtype combinations for this param (LinearParallelOperation's ini sections).
std::vector<DtypeRow> dtypeTable(const P& p, const LinearParallelInputs& r) {
  std::vector<DtypeRow> rows;
  const auto add = [&](ScalarType x, ScalarType w, ScalarType bias, ScalarType scale, ScalarType out) {
    DtypeRow row{{}, out};
    for (const auto& a : namedRoles(r)) {
      const int i = a.first;
      ScalarType t = x;
      if (i == r.weight) t = w;
      if (i == r.bias) t = bias;
      if (i == r.scale) t = scale;
      if (i == r.residual) t = out;
      if (i == r.tokenScale) t = ScalarType::Float;
      if (i == r.matrix || i == r.maxOutput) t = ScalarType::Int;
      row.in.push_back(t);
    }
    rows.push_back(std::move(row));
  };
  const ScalarType half = ScalarType::Half, bf16 = ScalarType::BFloat16, i8 = ScalarType::Char;
  if (!p.isQuant()) {
    for (ScalarType d : {half, bf16}) add(d, d, d, d, d);
    return rows;
  }
  if (!p.isMoe()) {
    for (ScalarType d : {half, bf16}) add(d, i8, d, d, d);  // W8A16
  }
  add(i8, i8, ScalarType::Int, ScalarType::Long, half);  // W8A8
  add(i8, i8, ScalarType::Int, ScalarType::Long, bf16);
  add(i8, i8, ScalarType::Int, ScalarType::Float, bf16);
  return rows;
}

std::string describe(const std::vector<ScalarType>& in, ScalarType out) {
  std::vector<std::string> names;
  for (ScalarType t : in) names.emplace_back(dtypeName(t));
  return "[" + c10::Join(", ", names) + " -> " + dtypeName(out) + "]";
}

// The output dtype (outDataType, else x's) and the arithmetic, after the dtype combination is found in ATB's
// table; raises ERROR_INVALID_TENSOR_INI_MATCH naming every input's dtype and the supported combinations.
std::pair<ScalarType, LinearMath> checkDtypes(const P& p, const LinearParallelInputs& r,
                                              const std::vector<at::Tensor>& inputs, bool biasEmpty) {
  const ScalarType x = inputs[r.x].scalar_type();
  const ScalarType out =
      p.outDataType == acl::kFloat16 ? ScalarType::Half : (p.outDataType == acl::kBf16 ? ScalarType::BFloat16 : x);
  std::vector<ScalarType> actual;
  for (const auto& a : namedRoles(r)) actual.push_back(inputs[a.first].scalar_type());
  const auto roles = namedRoles(r);
  const std::vector<DtypeRow> table = dtypeTable(p, r);
  for (const DtypeRow& row : table) {
    bool match = row.out == out;
    for (size_t i = 0; i < row.in.size() && match; ++i) {
      // The dequant offset is optional: an empty tensor stands for none, whatever its dtype.
      match = row.in[i] == actual[i] || (roles[i].first == r.bias && biasEmpty);
    }
    if (match) {
      const ScalarType w = inputs[r.weight].scalar_type();
      const LinearMath math = x == ScalarType::Char
                                  ? LinearMath::kInt8
                                  : (w == ScalarType::Char ? LinearMath::kWeightInt8 : LinearMath::kFloat);
      return {out, math};
    }
  }
  std::vector<std::string> supported;
  for (const DtypeRow& row : table) supported.push_back(describe(row.in, row.out));
  std::vector<std::string> names;
  for (const auto& a : roles) names.emplace_back(a.second);
  ATB_FAIL(ERROR_INVALID_TENSOR_INI_MATCH, kOp, " dtypes (", c10::Join(", ", names), " -> output) ",
           describe(actual, out), " (output from outDataType ", p.outDataType,
           ") are not a combination ATB supports for this param; supported: ", c10::Join(", ", supported));
}

std::string shapeText(int64_t first, int64_t last, bool allow1d) {
  const std::string two = "[" + std::to_string(first) + ", " + std::to_string(last) + "]";
  return allow1d ? "[" + std::to_string(last) + "] or " + two : two;
}

// ATB's LinearBiasDeqCheck: [first, last], or [last] where allow1d.
void checkVector(const at::Tensor& t, const std::string& what, int64_t last, int64_t first, bool allow1d) {
  const bool ok =
      (t.dim() == 2 && t.size(0) == first && t.size(1) == last) || (allow1d && t.dim() == 1 && t.size(0) == last);
  ATB_CHECK(ok, ERROR_INVALID_TENSOR_DIM, kOp, " ", what, " must have shape ", shapeText(first, last, allow1d),
            ", got ", t.sizes());
}

// x's k and the weight's (k, n), ATB's MatmulInTensorDescsCheck for the dense types.
void checkMatmulShapes(const P& p, const LinearParallelInputs& r, const std::vector<at::Tensor>& in,
                       LinearParallelPlan& plan) {
  const at::Tensor& x = in[r.x];
  const at::Tensor& w = in[r.weight];
  const auto xs = [&] { return inputName(r, r.x); };
  const auto ws = [&] { return inputName(r, r.weight); };
  if (p.isMoe()) {
    ATB_CHECK(x.dim() == 2, ERROR_INVALID_TENSOR_DIM, kOp, " ", xs(), " must be 2-D [tokens, k] for MoE type ", p.type,
              ", got shape ", x.sizes());
    ATB_CHECK(w.dim() == 3 && w.size(0) == p.moeInfo.localExpertNums, ERROR_INVALID_TENSOR_DIM, kOp, " ", ws(),
              " must be [localExpertNums=", p.moeInfo.localExpertNums, ", ", p.transWeight ? "n, k" : "k, n",
              "] for MoE type ", p.type, ", got shape ", w.sizes());
  } else {
    ATB_CHECK(x.dim() == 2 || x.dim() == 3, ERROR_INVALID_TENSOR_DIM, kOp, " ", xs(),
              " must be [m, k] or [batch, m, k], got shape ", x.sizes());
    ATB_CHECK(w.dim() == 2 || (w.dim() == 3 && w.size(0) == 1), ERROR_INVALID_TENSOR_DIM, kOp, " ", ws(), " must be ",
              p.transWeight ? "[n, k]" : "[k, n]", " (or with a leading batch of 1), got shape ", w.sizes());
  }
  const int64_t wk = p.transWeight ? w.size(-1) : w.size(-2);
  plan.n = p.transWeight ? w.size(-2) : w.size(-1);
  plan.k = x.size(-1);
  ATB_CHECK(plan.k == wk, ERROR_INVALID_TENSOR_DIM, kOp, " ", xs(), " has k=", plan.k, " (shape ", x.sizes(), ") but ",
            ws(), " has k=", wk, " (shape ", w.sizes(), ", transWeight ", p.transWeight ? "true" : "false", ")");
  plan.rows = c10::multiply_integers(x.sizes().slice(0, x.dim() - 1));
}

// deqScale, bias and the per-token scale of the dense quantised types.
void checkQuantShapes(const P& p, const LinearParallelInputs& r, const std::vector<at::Tensor>& in,
                      const LinearParallelPlan& plan) {
  const bool perTensor = p.quantType == P::QUANT_TYPE_PER_TENSOR;
  const bool perGroup = p.quantType == P::QUANT_TYPE_PER_GROUP;
  if (plan.math == LinearMath::kInt8) {
    ATB_CHECK(!perGroup, ERROR_INVALID_PARAM, kOp,
              " quantType 2 (per group) is not supported with int8 x (W8A8); it dequantises int8 weights of float16/"
              "bf16 x (W8A16)");
  }
  const int64_t last = perTensor ? 1 : plan.n;
  const int64_t groups = perGroup ? (plan.k + p.quantGroupSize - 1) / p.quantGroupSize : 1;
  // A per-group scale with more than one group must say so (ATB would read a [n] vector as groups x n).
  const bool allow1d = groups == 1;
  checkVector(in[r.scale], inputName(r, r.scale), last, groups, allow1d);
  if (plan.hasBias) checkVector(in[r.bias], inputName(r, r.bias), last, groups, allow1d);
}

void checkTokenScale(const LinearParallelInputs& r, const std::vector<at::Tensor>& in, int64_t rows) {
  const at::Tensor& t = in[r.tokenScale];
  const bool ok = (t.dim() == 1 && t.size(0) == rows) || (t.dim() == 2 && t.size(0) == rows && t.size(1) == 1);
  ATB_CHECK(ok, ERROR_INVALID_TENSOR_DIM, kOp, " ", inputName(r, r.tokenScale), " must have shape [", rows,
            "] (one scale per row of x), got ", t.sizes());
}

// Output 0's shape for the dense types, and the type's own size rules.
Shape denseOutputShape(const P& p, const at::Tensor& x, int64_t n) {
  Shape shape = x.sizes().vec();
  shape.back() = n;
  const int64_t size = p.comm.rankSize;
  switch (p.type) {
    case P::LINEAR_REDUCE_SCATTER: {
      // ATB scatters dim 0, or dim 1 of a [1, m, k] x: a contiguous 1/rankSize of the rows either way.
      const size_t d = (x.dim() == 3 && x.size(0) == 1) ? 1 : 0;
      ATB_CHECK(shape[d] % size == 0, ERROR_INVALID_TENSOR_DIM, kOp, " type LINEAR_REDUCE_SCATTER needs x's dim ", d,
                " divisible by rankSize=", size, ", got x of shape ", x.sizes());
      shape[d] /= size;
      break;
    }
    case P::ALL_GATHER_LINEAR: shape[0] *= size; break;
    case P::ALL_GATHER_LINEAR_REDUCE_SCATTER: {
      const int64_t ag = p.twoDimTPInfo.agDim, rs = p.twoDimTPInfo.rsDim;
      ATB_CHECK(shape[0] * ag % rs == 0, ERROR_INVALID_TENSOR_DIM, kOp, " type ALL_GATHER_LINEAR_REDUCE_SCATTER needs ",
                "x's dim 0 (", shape[0], ") times agDim (", ag, ") divisible by rsDim (", rs, "), got x of shape ",
                x.sizes());
      shape[0] = shape[0] * ag / rs;
      break;
    }
    default: break;
  }
  return shape;
}

// The 2-D TP groups: ag groups gather x, rs groups reduce-scatter the result (ATB's golden: with innerDimIsAg
// the ag group is consecutive ranks and a rank's chunk is rank / agDim; otherwise the rs group is consecutive and
// the chunk is rank % rsDim).
void planTwoDim(const P& p, int64_t xNumel, int64_t resultNumel, LinearParallelPlan& plan) {
  const int32_t rank = p.comm.rank, n = p.comm.rankSize;
  const int32_t ag = p.twoDimTPInfo.agDim, rs = p.twoDimTPInfo.rsDim;
  const bool inner = p.twoDimTPInfo.innerDimIsAg != 0;
  const int32_t agPos = inner ? rank % ag : rank / rs;
  const int32_t rsPos = inner ? rank / ag : rank % rs;
  const auto agMember = [&](int32_t j) { return inner ? rsPos * ag + j : j * rs + rsPos; };
  const auto rsMember = [&](int32_t q) { return inner ? q * ag + agPos : agPos * rs + q; };
  const std::vector<int64_t> zeros(static_cast<size_t>(n), 0);
  plan.agGather = AllToAllVLayout{zeros, zeros, zeros, zeros};
  for (int32_t j = 0; j < ag; ++j) {
    const int32_t peer = agMember(j);
    plan.agGather.sendCounts[peer] = xNumel;
    plan.agGather.recvCounts[peer] = xNumel;
    plan.agGather.rdispls[peer] = j * xNumel;
  }
  validateLayout(plan.agGather, n, xNumel, ag * xNumel);
  const int64_t chunk = resultNumel;  // this rank's output elements
  plan.rsScatter = AllToAllVLayout{zeros, zeros, zeros, zeros};
  for (int32_t q = 0; q < rs; ++q) {
    const int32_t peer = rsMember(q);
    plan.rsScatter.sendCounts[peer] = chunk;
    plan.rsScatter.sdispls[peer] = q * chunk;
    plan.rsScatter.recvCounts[peer] = chunk;
    plan.rsScatter.rdispls[peer] = q * chunk;
  }
  validateLayout(plan.rsScatter, n, rs * chunk, rs * chunk);
  plan.rsMembers = rs;
}

// globalTokensPerExpertMatrix and maxOutputSize, ATB's MoE checks, and the token layout.
void planMoe(const P& p, const LinearParallelInputs& r, const std::vector<at::Tensor>& in, LinearParallelPlan& plan) {
  const int32_t ep = p.moeInfo.epSize, tp = p.moeInfo.tpSize, L = p.moeInfo.localExpertNums;
  const at::Tensor& m = in[r.matrix];
  ATB_CHECK(m.dim() == 2 && m.size(0) == ep && m.size(1) == int64_t{ep} * L, ERROR_INVALID_TENSOR_DIM, kOp, " ",
            inputName(r, r.matrix), " must have shape [epSize=", ep, ", epSize * localExpertNums=", ep * L, "], got ",
            m.sizes());
  const at::Tensor& maxOut = in[r.maxOutput];
  ATB_CHECK(maxOut.dim() >= 1, ERROR_INVALID_TENSOR_DIM, kOp, " ", inputName(r, r.maxOutput),
            " must have at least 1 dimension (its length is the output's rows), got a scalar");
  plan.outputRows = maxOut.size(0);
  ATB_CHECK(plan.outputRows <= kMaxMoeOutputRows, ERROR_INVALID_TENSOR_SIZE, kOp, " ", inputName(r, r.maxOutput),
            " asks for ", plan.outputRows, " output rows; at most ", kMaxMoeOutputRows);
  ATB_CHECK(plan.k <= kMaxMoeK, ERROR_INVALID_TENSOR_SIZE, kOp, " MoE types allow k up to ", kMaxMoeK,
            ", got k=", plan.k);
  if (r.scale >= 0) {
    const at::Tensor& s = in[r.scale];
    ATB_CHECK(s.dim() <= 2 && s.numel() == int64_t{L} * plan.n, ERROR_INVALID_TENSOR_DIM, kOp, " ",
              inputName(r, r.scale), " must hold localExpertNums * n = ", L, " * ", plan.n,
              " per-channel scales (shape [", L * plan.n, "] or [", L, ", ", plan.n, "]), got ", s.sizes());
  }
  // Tensor descriptions alone (ATB's InferShape in C++): the output is [maxOutputSize's rows, n] whatever the counts
  // are; the counts and the layout they make are checked by Setup and Execute, which have the values.
  if (m.is_meta()) return;
  const at::Tensor host = m.to(at::kCPU, at::kLong).contiguous();
  const int64_t* v = host.data_ptr<int64_t>();
  std::vector<int64_t> counts(v, v + host.numel());
  for (size_t i = 0; i < counts.size(); ++i) {
    ATB_CHECK(counts[i] >= 0, ERROR_INVALID_PARAM, kOp, " ", inputName(r, r.matrix), "[", i / (ep * L), "][",
              i % (ep * L), "] is ", counts[i], "; token counts must be >= 0");
  }
  const bool dispatch = p.type == P::ALLTOALLVC_ALL_GATHER_GMM;
  plan.limit = dispatch ? plan.outputRows : in[r.x].size(0);
  plan.moe = moeLayout(counts, ep, tp, L, p.comm.rank, plan.limit);
  const int32_t epIndex = p.comm.rank / tp;
  if (dispatch) {
    ATB_CHECK(plan.moe.ownTokens <= in[r.x].size(0), ERROR_INVALID_TENSOR_DIM, kOp, " ", inputName(r, r.x), " has ",
              in[r.x].size(0), " rows but ", inputName(r, r.matrix), " row ", epIndex, " sends ", plan.moe.ownTokens,
              " tokens from this rank");
    validateLayout(scaleLayout(plan.moe.dispatch, plan.k), p.comm.rankSize, in[r.x].numel(),
                   plan.moe.keptRows * plan.k);
  } else {
    ATB_CHECK(plan.moe.ownTokens <= plan.outputRows, ERROR_INVALID_TENSOR_DIM, kOp, " ", inputName(r, r.maxOutput),
              " gives ", plan.outputRows, " output rows but ", inputName(r, r.matrix), " row ", epIndex, " returns ",
              plan.moe.ownTokens, " tokens to this rank");
    validateLayout(scaleLayout(combineLayout(plan.moe, tp, plan.outputRows), plan.n), p.comm.rankSize,
                   plan.moe.keptRows * plan.n, tp * plan.outputRows * plan.n);
  }
}

}  // namespace

LinearParallelPlan planLinearParallel(const P& p, const std::vector<at::Tensor>& inputs) {
  LinearParallelPlan plan;
  const LinearParallelInputs r = rolesOf(p);
  plan.in = r;

  // Count, presence and devices.
  ATB_CHECK(inputs.size() == p.inputNum(), ERROR_INVALID_IN_TENSOR_NUM, kOp, " takes ", p.inputNum(),
            " input tensors for this param (", roleList(r), "), got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ATB_CHECK(inputs[i].defined() || static_cast<int>(i) == r.bias, ERROR_INVALID_PARAM, kOp, " ",
              inputName(r, static_cast<int>(i)), " is an undefined tensor");
  }
  plan.hasBias = r.bias >= 0 && inputs[r.bias].defined() && inputs[r.bias].numel() > 0;
  const c10::Device device = inputs[r.x].device();
  for (const auto& a : namedRoles(r)) {
    const at::Tensor& t = inputs[a.first];
    // The MoE count tensors are read on the host; the rest is computed on x's device.
    if (!t.defined() || a.first == r.matrix || a.first == r.maxOutput || (a.first == r.bias && !plan.hasBias)) continue;
    ATB_CHECK(t.device() == device, ERROR_INVALID_PARAM, kOp, " ", inputName(r, a.first), " is on ", t.device(),
              " but x is on ", device);
  }

  // Dtypes: ATB's table, then the arithmetic it implies.
  std::vector<at::Tensor> typed(inputs);
  if (r.bias >= 0 && !typed[r.bias].defined()) typed[r.bias] = at::empty({0}, inputs[r.x].options());
  std::tie(plan.outDtype, plan.math) = checkDtypes(p, r, typed, r.bias >= 0 && !plan.hasBias);

  // Shapes.
  checkMatmulShapes(p, r, inputs, plan);
  const at::Tensor& x = inputs[r.x];
  if (p.comm.backend == "mc2") {
    ATB_CHECK(x.dim() == 2 && inputs[r.weight].dim() == 2, ERROR_INVALID_TENSOR_DIM_NUM, kOp,
              " backend 'mc2' needs 2-D x and weight, got ", x.sizes(), " and ", inputs[r.weight].sizes());
    ATB_CHECK(plan.k >= kMc2MinK && plan.k < kMc2MaxK, ERROR_INVALID_TENSOR_DIM, kOp, " backend 'mc2' needs k in [",
              kMc2MinK, ", ", kMc2MaxK, "), got ", plan.k);
  }
  if (r.residual >= 0) checkVector(inputs[r.residual], inputName(r, r.residual), plan.n, 1, true);
  if (r.tokenScale >= 0) checkTokenScale(r, inputs, plan.rows);
  if (p.isMoe()) {
    planMoe(p, r, inputs, plan);
    plan.outputs.push_back(TensorDesc{plan.outDtype, Shape{plan.outputRows, plan.n}});
    return plan;
  }
  if (p.isQuant()) checkQuantShapes(p, r, inputs, plan);
  const Shape out = denseOutputShape(p, x, plan.n);
  plan.outputs.push_back(TensorDesc{plan.outDtype, out});
  if (p.keepIntermediate) {
    Shape gathered = x.sizes().vec();
    gathered[0] *= p.comm.rankSize;
    plan.outputs.push_back(TensorDesc{x.scalar_type(), gathered});
  }
  if (p.type == P::ALL_GATHER_LINEAR_REDUCE_SCATTER) {
    planTwoDim(p, x.numel(), c10::multiply_integers(out), plan);
  }
  return plan;
}

}  // namespace atb_ops
