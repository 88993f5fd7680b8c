#include "ops/linear_parallel_run.h"

#include <ATen/ATen.h>

#include "comm/communicator.h"
#include "core/status.h"

namespace atb_ops {
namespace {

using P = LinearParallelParam;

// What every matmul of this call shares: the weight (2-D, or one expert's) and the dequantisation.
struct Linear {
  at::Tensor weight;  // non-MoE: [k, n] / [n, k]; MoE: [L, ...]
  bool transWeight;
  Dequant dq;
};

Linear linearOf(const P& p, const LinearParallelPlan& plan, const std::vector<at::Tensor>& in) {
  const LinearParallelInputs& r = plan.in;
  Linear l;
  l.weight = in[r.weight];
  if (!p.isMoe() && l.weight.dim() == 3) l.weight = l.weight.select(0, 0);  // a [1, k, n] weight
  l.transWeight = p.transWeight;
  l.dq.math = plan.math;
  l.dq.quantType = p.quantType;
  l.dq.groupSize = p.quantGroupSize;
  if (r.scale >= 0) l.dq.scale = in[r.scale];
  if (plan.hasBias) l.dq.offset = in[r.bias];
  if (r.tokenScale >= 0) l.dq.tokenScale = in[r.tokenScale].reshape({-1});
  return l;
}

// rows x2d [rows, k] through the matmul, written into out2d [rows, n] (any float dtype).
void linearInto(const Linear& l, const at::Tensor& x2d, at::Tensor out2d) {
  out2d.copy_(linearRows(x2d, l.weight, l.transWeight, l.dq));
}

// One expert's matmul on the expert-major rows [first, first + count) of x2d: its weight and its n scales.
at::Tensor expertRows(const Linear& l, int64_t expert, const at::Tensor& x2d, int64_t first, int64_t count, int64_t n,
                      const at::Tensor& tokenScale) {
  Dequant dq = l.dq;
  if (dq.scale.defined()) dq.scale = dq.scale.reshape({-1}).narrow(0, expert * n, n);
  if (tokenScale.defined()) dq.tokenScale = tokenScale.narrow(0, first, count);
  return linearRows(x2d.narrow(0, first, count), l.weight.select(0, expert), l.transWeight, dq);
}

bool hasResidual(const LinearParallelPlan& plan) {
  return plan.in.residual >= 0;
}

// float32 rows plus the residual, rounded once into out2d. lcoc hands the residual to its kernels as the matmul's
// bias, added in the accumulator: adding it to rows already rounded to bfloat16 rounds twice (off by up to half
// an ulp of the larger term, beyond ATB's 2^-6 tolerance where the two nearly cancel).
void roundInto(at::Tensor rows32, const LinearParallelPlan& plan, const std::vector<at::Tensor>& in, at::Tensor out2d) {
  if (hasResidual(plan)) rows32.add_(in[plan.in.residual].reshape({1, -1}).to(at::kFloat));
  out2d.copy_(rows32);
}

at::Tensor rowsOf(const at::Tensor& t, int64_t n) {
  return t.view({-1, n});
}

// LINEAR_ALL_REDUCE (and ATB's hccl/lccl runner), PURE_LINEAR. With a residual, the partial products are reduced
// in float32 and rounded once with the residual.
void runDense(const P& p, const LinearParallelPlan& plan, const std::vector<at::Tensor>& in,
              std::vector<at::Tensor>& out, Communicator* comm) {
  const at::Tensor x = in[plan.in.x].contiguous().view({plan.rows, plan.k});
  at::Tensor y = rowsOf(out[0], plan.n);
  if (hasResidual(plan)) {
    const Linear l = linearOf(p, plan, in);
    at::Tensor y32 = linearRows(x, l.weight, l.transWeight, l.dq).contiguous();
    if (comm != nullptr) comm->allreduce(y32, y32, ReduceOp::kSum);
    roundInto(y32, plan, in, y);
    return;
  }
  linearInto(linearOf(p, plan, in), x, y);
  if (comm != nullptr) comm->allreduce(y, y, ReduceOp::kSum);
}

void runReduceScatter(const P& p, const LinearParallelPlan& plan, const std::vector<at::Tensor>& in,
                      std::vector<at::Tensor>& out, Communicator& comm) {
  const at::Tensor x = in[plan.in.x].contiguous().view({plan.rows, plan.k});
  if (hasResidual(plan)) {
    const Linear l = linearOf(p, plan, in);
    const at::Tensor full32 = linearRows(x, l.weight, l.transWeight, l.dq).contiguous();
    at::Tensor mine32 = at::empty({out[0].numel()}, full32.options());
    comm.reduceScatter(full32, mine32, ReduceOp::kSum);
    roundInto(mine32.view({-1, plan.n}), plan, in, rowsOf(out[0], plan.n));
    return;
  }
  at::Tensor full = at::empty({plan.rows, plan.n}, x.options().dtype(plan.outDtype));
  linearInto(linearOf(p, plan, in), x, full);
  at::Tensor mine = out[0].view({-1});
  comm.reduceScatter(full, mine, ReduceOp::kSum);
}

void runAllGather(const P& p, const LinearParallelPlan& plan, const std::vector<at::Tensor>& in,
                  std::vector<at::Tensor>& out, Communicator& comm) {
  const at::Tensor x = in[plan.in.x].contiguous();
  std::vector<int64_t> stacked{p.comm.rankSize};
  for (int64_t s : x.sizes()) stacked.push_back(s);
  at::Tensor gathered =
      p.keepIntermediate ? out[1].view(stacked) : comm.emptyOutput(stacked, x.options());  // rank-major = dim 0
  comm.allgather(x, gathered);
  const Linear l = linearOf(p, plan, in);
  roundInto(linearRows(gathered.view({-1, plan.k}), l.weight, l.transWeight, l.dq), plan, in, rowsOf(out[0], plan.n));
}

void runTwoDim(const P& p, const LinearParallelPlan& plan, const std::vector<at::Tensor>& in,
               std::vector<at::Tensor>& out, Communicator& comm) {
  const at::Tensor x = in[plan.in.x].contiguous();
  const int64_t ag = p.twoDimTPInfo.agDim;
  at::Tensor gathered = at::empty({ag * x.numel()}, x.options());
  comm.alltoallv(x.view({-1}), plan.agGather, gathered);
  // With a residual the partial products travel in float32, so the sum and the residual are rounded once.
  const c10::ScalarType partial = hasResidual(plan) ? at::kFloat : plan.outDtype;
  at::Tensor y = at::empty({ag * plan.rows, plan.n}, x.options().dtype(partial));
  linearInto(linearOf(p, plan, in), gathered.view({-1, plan.k}), y);
  // Every rs member sends this rank its partial chunk; the chunks are added in float32 in rs order.
  at::Tensor parts = at::empty({plan.rsMembers, out[0].numel()}, y.options());
  comm.alltoallv(y.view({-1}), plan.rsScatter, parts);
  roundInto(parts.to(at::kFloat).sum(0).view({-1, plan.n}), plan, in, rowsOf(out[0], plan.n));
}

at::Tensor indexTensor(const std::vector<int64_t>& v, const c10::Device& device) {
  return at::tensor(v, at::TensorOptions().dtype(at::kLong)).to(device);
}

// ALLTOALLVC_ALL_GATHER_GMM: tokens (and their per-token scales) to the ranks of their experts' group, then one
// matmul per local expert over its rows, expert-major; rows past what this rank keeps are zero.
void runDispatch(const P& p, const LinearParallelPlan& plan, const std::vector<at::Tensor>& in,
                 std::vector<at::Tensor>& out, Communicator& comm) {
  const MoeLayout& m = plan.moe;
  const at::Tensor x = in[plan.in.x].contiguous();
  at::Tensor received = at::empty({m.keptRows, plan.k}, x.options());
  comm.alltoallv(x.view({-1}), scaleLayout(m.dispatch, plan.k), received);
  at::Tensor tokenScale;
  if (plan.in.tokenScale >= 0) {
    const at::Tensor mine = in[plan.in.tokenScale].reshape({-1}).to(at::kFloat).contiguous();
    tokenScale = at::empty({m.keptRows}, mine.options());
    comm.alltoallv(mine, m.dispatch, tokenScale);
  }
  const at::Tensor order = indexTensor(m.expertMajorSource, x.device());
  const at::Tensor tokens = received.index_select(0, order);
  if (tokenScale.defined()) tokenScale = tokenScale.index_select(0, order);
  at::Tensor y = out[0];
  y.narrow(0, m.keptRows, plan.outputRows - m.keptRows).zero_();
  const Linear l = linearOf(p, plan, in);
  for (int64_t e = 0; e + 1 < static_cast<int64_t>(m.expertOffsets.size()); ++e) {
    const int64_t first = m.expertOffsets[e], count = m.expertOffsets[e + 1] - first;
    if (count > 0) {
      roundInto(expertRows(l, e, tokens, first, count, plan.n, tokenScale), plan, in, y.narrow(0, first, count));
    }
  }
}

// GMM_REDUCE_SCATTER_ALLTOALLVC: one matmul per local expert over the rows this rank holds (expert-major, as
// the dispatch left them), then every row back to the rank it came from; a source adds the partial results of
// its owner group's TP members in float32. Rows cut by the owners' limit, and rows past this rank's own
// tokens, are zero.
void runCombine(const P& p, const LinearParallelPlan& plan, const std::vector<at::Tensor>& in,
                std::vector<at::Tensor>& out, Communicator& comm) {
  const MoeLayout& m = plan.moe;
  const int32_t tp = p.moeInfo.tpSize;
  const at::Tensor x = in[plan.in.x].contiguous();
  at::Tensor tokenScale;
  if (plan.in.tokenScale >= 0) tokenScale = in[plan.in.tokenScale].reshape({-1});
  const Linear l = linearOf(p, plan, in);
  // With a residual the rows travel in float32, so the owners' sum and the residual are rounded once.
  const c10::ScalarType partial = hasResidual(plan) ? at::kFloat : plan.outDtype;
  at::Tensor y = at::empty({m.keptRows, plan.n}, x.options().dtype(partial));
  for (int64_t e = 0; e + 1 < static_cast<int64_t>(m.expertOffsets.size()); ++e) {
    const int64_t first = m.expertOffsets[e], count = m.expertOffsets[e + 1] - first;
    if (count > 0) y.narrow(0, first, count).copy_(expertRows(l, e, x, first, count, plan.n, tokenScale));
  }
  // Rank-major, the order the dispatch received the rows in.
  at::Tensor back = at::empty_like(y);
  back.index_copy_(0, indexTensor(m.expertMajorSource, x.device()), y);
  const AllToAllVLayout layout = scaleLayout(combineLayout(m, tp, plan.outputRows), plan.n);
  at::Tensor result = out[0];
  if (tp == 1 && !hasResidual(plan)) {
    result.zero_();
    at::Tensor flat = result.view({-1});
    comm.alltoallv(back.view({-1}), layout, flat);
    return;
  }
  at::Tensor planes = at::zeros({tp, plan.outputRows, plan.n}, y.options());
  comm.alltoallv(back.view({-1}), layout, planes);
  at::Tensor sum = planes.to(at::kFloat).sum(0);
  if (hasResidual(plan)) sum.narrow(0, 0, m.ownTokens).add_(in[plan.in.residual].reshape({1, -1}).to(at::kFloat));
  result.copy_(sum);
}

}  // namespace

bool linearParallelCommunicates(const P& p) {
  return p.graphRunner() || p.type != P::PURE_LINEAR;
}

void runLinearParallel(const P& p, const LinearParallelPlan& plan, const std::vector<at::Tensor>& inputs,
                       std::vector<at::Tensor>& outputs, Communicator* comm) {
  ATB_CHECK(comm != nullptr || !linearParallelCommunicates(p), ERROR_COMM_EMPTY, kLinearParallelName,
            " has no communicator");
  if (p.graphRunner()) {
    runDense(p, plan, inputs, outputs, comm);
    return;
  }
  switch (p.type) {
    case P::PURE_LINEAR: runDense(p, plan, inputs, outputs, nullptr); break;
    case P::LINEAR_ALL_REDUCE: runDense(p, plan, inputs, outputs, comm); break;
    case P::LINEAR_REDUCE_SCATTER: runReduceScatter(p, plan, inputs, outputs, *comm); break;
    case P::ALL_GATHER_LINEAR: runAllGather(p, plan, inputs, outputs, *comm); break;
    case P::ALL_GATHER_LINEAR_REDUCE_SCATTER: runTwoDim(p, plan, inputs, outputs, *comm); break;
    case P::ALLTOALLVC_ALL_GATHER_GMM: runDispatch(p, plan, inputs, outputs, *comm); break;
    case P::GMM_REDUCE_SCATTER_ALLTOALLVC: runCombine(p, plan, inputs, outputs, *comm); break;
    default: ATB_FAIL(ERROR_INVALID_PARAM, kLinearParallelName, " type ", p.type, " has no runner");
  }
}

}  // namespace atb_ops
