// Every communication operator of ATB's C++ API on CPU ranks, values checked against goldens computed here on
// the host: AllGather, AllGatherV, AllReduce (sum/max/min/prod, several dtypes, in place, launched in two
// stages, "lccl" in threads), Broadcast, ReduceScatter, ReduceScatterV, AllToAll, AllToAllV, AllToAllVV2 (counts
// from hostData), Send/Recv, LinearParallel (all-reduce, reduce-scatter, all-gather with its intermediate), and
// a layout that disagrees across ranks (an error on every rank, then the communicator still works).
//
//   atb_collectives proc <rank> <n>                      one rank per launch, commMode 0 (processes)
//   atb_collectives fork <n>                             forks n ranks before any ACL call (ATB's demos), commMode 0
//   atb_collectives threads <n>                          n ranks as threads of this process, commMode 1
//   atb_collectives hccl-proc <rank> <n> <root-file>     commMode 0 over the program's own HcclComm
//                                                        (HcclCommInitRootInfo; root info handed over in a file)
//   atb_collectives hccl-threads <n>                     commMode 1 over HcclComms from HcclCommInitAll
//
// Each rank prints "rank R: ok, N checks" and the process exits 0 when every rank passed; with a caller's HcclComm
// the program checks that atb_ops left it alive, then destroys it itself.
#include <hccl/hccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <thread>

#include "atb_test_util.h"

namespace {

using atbtest::CheckFailed;
using atbtest::CountTensor;
using atbtest::DeviceTensor;

struct Rank {
  int rank = 0;
  int n = 1;
  atb::infer::CommMode mode = atb::infer::COMM_MULTI_PROCESS;
  HcclComm comm = nullptr;  // the program's own communicator, or none
  atb::Context* context = nullptr;
  aclrtStream stream = nullptr;
};

template <typename Param>
Param commParam(const Rank& r, const std::string& backend = "hccl") {
  Param p;
  p.rank = r.rank;
  p.rankSize = r.n;
  p.rankRoot = 0;
  p.backend = backend;
  p.hcclComm = r.comm;
  p.commMode = r.mode;
  return p;
}

// An operation that is destroyed with the object.
struct Op {
  template <typename Param>
  explicit Op(const Param& p) {
    EXPECT_OK(atb::CreateOperation(p, &op));
    EXPECT_TRUE(op != nullptr, "CreateOperation gave no operation");
  }
  ~Op() {
    if (op != nullptr && atb::DestroyOperation(op) != 0) std::fprintf(stderr, "DestroyOperation failed\n");
  }
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;
  atb::Operation* op = nullptr;
};

atb::VariantPack pack(std::initializer_list<atb::Tensor> in, std::initializer_list<atb::Tensor> out) {
  atb::VariantPack p;
  p.inTensors = in;
  p.outTensors = out;
  return p;
}

// A value of rank `r` at flat index `i`: small integers, exact in every dtype used, distinct across ranks.
double value(int r, size_t i) {
  return static_cast<double>((r * 7 + static_cast<int>(i) * 3) % 31 - 8);
}

std::vector<double> valuesOf(int r, size_t count) {
  std::vector<double> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = value(r, i);
  return v;
}

std::string label(const char* op, aclDataType dtype) {
  return std::string(op) + " dtype " + std::to_string(dtype);
}

void allGather(const Rank& r, aclDataType dtype) {
  const std::vector<int64_t> shape{3, 5};
  DeviceTensor x(dtype, shape, valuesOf(r.rank, 15));
  DeviceTensor out(dtype, {r.n, 3, 5});
  Op op(commParam<atb::infer::AllGatherParam>(r));
  // InferShape: [rankSize, *x.shape], x's dtype.
  atb::SVector<atb::TensorDesc> outDescs;
  EXPECT_OK(op.op->InferShape({x.tensor.desc}, outDescs));
  EXPECT_TRUE(outDescs.size() == 1 && outDescs[0].shape.dimNum == 3 && outDescs[0].shape.dims[0] == r.n &&
                  outDescs[0].shape.dims[1] == 3 && outDescs[0].shape.dims[2] == 5 && outDescs[0].dtype == dtype,
              "AllGather InferShape");
  atbtest::runOperation(op.op, pack({x.tensor}, {out.tensor}), r.context, r.stream);
  std::vector<double> want;
  for (int j = 0; j < r.n; ++j) {
    // The values as `dtype` holds them (bool: non-zero is 1), converted here on the host.
    const std::vector<double> part = atbtest::decode(atbtest::encode(valuesOf(j, 15), dtype), dtype);
    want.insert(want.end(), part.begin(), part.end());
  }
  atbtest::expectValues(out.download(), want, label("AllGather", dtype));
}

// Rank j contributes its first j + 1 elements; they land one after another.
void allGatherV(const Rank& r) {
  const int64_t total = static_cast<int64_t>(r.n) * (r.n + 1) / 2;
  std::vector<int64_t> counts(r.n), displs(r.n);
  for (int j = 0; j < r.n; ++j) {
    counts[j] = j + 1;
    displs[j] = static_cast<int64_t>(j) * (j + 1) / 2;
  }
  DeviceTensor x(ACL_FLOAT, {6, 1}, valuesOf(r.rank, 6));
  CountTensor sendCount({r.rank + 1}), recvCounts(counts), rdispls(displs);
  DeviceTensor y(ACL_FLOAT, {total});
  DeviceTensor out(ACL_FLOAT, {total, 1});
  Op op(commParam<atb::infer::AllGatherVParam>(r));
  atb::SVector<atb::TensorDesc> outDescs;
  EXPECT_OK(op.op->InferShape(
      {x.tensor.desc, sendCount.tensor.desc, recvCounts.tensor.desc, rdispls.tensor.desc, y.tensor.desc}, outDescs));
  EXPECT_TRUE(outDescs.size() == 1 && outDescs[0].shape.dimNum == 2 && outDescs[0].shape.dims[0] == total &&
                  outDescs[0].shape.dims[1] == 1,
              "AllGatherV InferShape");
  atbtest::runOperation(op.op,
                        pack({x.tensor, sendCount.tensor, recvCounts.tensor, rdispls.tensor, y.tensor}, {out.tensor}),
                        r.context, r.stream);
  std::vector<double> want;
  for (int j = 0; j < r.n; ++j) {
    for (int i = 0; i <= j; ++i) want.push_back(value(j, i));
  }
  atbtest::expectValues(out.download(), want, "AllGatherV");
}

double reduce(const std::string& kind, const std::vector<double>& parts) {
  double acc = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    if (kind == "sum") acc += parts[i];
    if (kind == "prod") acc *= parts[i];
    if (kind == "max") acc = std::max(acc, parts[i]);
    if (kind == "min") acc = std::min(acc, parts[i]);
  }
  return acc;
}

// prod uses values in {1, 2, 3} so that 4 ranks stay exact.
double reduceInput(const std::string& kind, int r, size_t i) {
  return kind == "prod" ? static_cast<double>((r + static_cast<int>(i)) % 3 + 1) : value(r, i);
}

void allReduce(const Rank& r, aclDataType dtype, const std::string& kind, bool inPlace = false,
               const std::string& backend = "hccl") {
  const size_t count = 2 * 40;
  std::vector<double> mine(count), want(count);
  for (size_t i = 0; i < count; ++i) {
    mine[i] = reduceInput(kind, r.rank, i);
    std::vector<double> parts;
    for (int j = 0; j < r.n; ++j) parts.push_back(reduceInput(kind, j, i));
    want[i] = reduce(kind, parts);
  }
  DeviceTensor x(dtype, {2, 40}, mine);
  DeviceTensor out(dtype, {2, 40});
  auto p = commParam<atb::infer::AllReduceParam>(r, backend);
  p.allReduceType = kind;
  Op op(p);
  const atb::Tensor& target = inPlace ? x.tensor : out.tensor;
  atbtest::runOperation(op.op, pack({x.tensor}, {target}), r.context, r.stream);
  atbtest::expectValues((inPlace ? x : out).download(), want,
                        label("AllReduce", dtype) + " " + kind + (inPlace ? " in place" : "") + " " + backend);
}

// ATB's split launch (Context::SetExecuteType): EXECUTE_PRELAUNCH's Execute only prepares, EXECUTE_LAUNCH's moves
// the data, so an in-place all-reduce launched in two stages is summed once, not twice.
void allReduceLaunchedInTwoStages(const Rank& r) {
  const size_t count = 12;
  std::vector<double> mine(count), want(count);
  for (size_t i = 0; i < count; ++i) {
    mine[i] = value(r.rank, i);
    for (int j = 0; j < r.n; ++j) want[i] += value(j, i);
  }
  DeviceTensor x(ACL_FLOAT, {static_cast<int64_t>(count)}, mine);
  Op op(commParam<atb::infer::AllReduceParam>(r));
  const atb::VariantPack vp = pack({x.tensor}, {x.tensor});
  uint64_t workspaceSize = 0;
  EXPECT_OK(op.op->Setup(vp, workspaceSize, r.context));
  EXPECT_OK(r.context->SetExecuteType(atb::EXECUTE_PRELAUNCH));
  EXPECT_OK(op.op->Execute(vp, nullptr, workspaceSize, r.context));
  EXPECT_OK(aclrtSynchronizeStream(r.stream));
  atbtest::expectValues(x.download(), mine, "AllReduce in place after EXECUTE_PRELAUNCH only (nothing moved yet)");
  EXPECT_OK(r.context->SetExecuteType(atb::EXECUTE_LAUNCH));
  EXPECT_OK(op.op->Execute(vp, nullptr, workspaceSize, r.context));
  EXPECT_OK(aclrtSynchronizeStream(r.stream));
  EXPECT_OK(r.context->SetExecuteType(atb::EXECUTE_NORMAL));
  atbtest::expectValues(x.download(), want, "AllReduce in place launched in two stages (PRELAUNCH, LAUNCH)");
}

void broadcast(const Rank& r) {
  const int root = r.n - 1;
  DeviceTensor x(ACL_INT32, {7}, r.rank == root ? valuesOf(root, 7) : std::vector<double>(7, 0.0));
  auto p = commParam<atb::infer::BroadcastParam>(r);
  p.rankRoot = root;
  Op op(p);
  EXPECT_TRUE(op.op->GetInputNum() == 1 && op.op->GetOutputNum() == 0, "Broadcast takes 1 input and no output");
  atbtest::runOperation(op.op, pack({x.tensor}, {}), r.context, r.stream);
  atbtest::expectValues(x.download(), valuesOf(root, 7), "Broadcast (in place on x)");
}

// x [n * 2, 3]: rank r gets the sum of every rank's rows [2r, 2r + 2).
void reduceScatter(const Rank& r) {
  const size_t rows = 2, cols = 3, chunk = rows * cols;
  DeviceTensor x(ACL_FLOAT16, {static_cast<int64_t>(r.n * rows), static_cast<int64_t>(cols)},
                 valuesOf(r.rank, r.n * chunk));
  DeviceTensor out(ACL_FLOAT16, {static_cast<int64_t>(rows), static_cast<int64_t>(cols)});
  auto p = commParam<atb::infer::ReduceScatterParam>(r);
  p.reduceType = "sum";
  Op op(p);
  atbtest::runOperation(op.op, pack({x.tensor}, {out.tensor}), r.context, r.stream);
  std::vector<double> want(chunk, 0.0);
  for (size_t i = 0; i < chunk; ++i) {
    for (int j = 0; j < r.n; ++j) want[i] += value(j, r.rank * chunk + i);
  }
  atbtest::expectValues(out.download(), want, "ReduceScatter");
}

// Every rank's x [total, 1]; rank j receives the sum of region [displs[j], + j + 1).
void reduceScatterV(const Rank& r) {
  const int64_t total = static_cast<int64_t>(r.n) * (r.n + 1) / 2;
  std::vector<int64_t> counts(r.n), displs(r.n);
  for (int j = 0; j < r.n; ++j) {
    counts[j] = j + 1;
    displs[j] = static_cast<int64_t>(j) * (j + 1) / 2;
  }
  DeviceTensor x(ACL_INT32, {total, 1}, valuesOf(r.rank, total));
  CountTensor sendCounts(counts), sdispls(displs), recvCount({r.rank + 1});
  DeviceTensor y(ACL_INT32, {r.rank + 1});
  DeviceTensor out(ACL_INT32, {r.rank + 1, 1});
  auto p = commParam<atb::infer::ReduceScatterVParam>(r);
  p.sendCounts = counts;
  p.sdispls = displs;
  p.recvCount = r.rank + 1;
  Op op(p);
  atbtest::runOperation(op.op,
                        pack({x.tensor, sendCounts.tensor, sdispls.tensor, recvCount.tensor, y.tensor}, {out.tensor}),
                        r.context, r.stream);
  std::vector<double> want(r.rank + 1, 0.0);
  for (int i = 0; i <= r.rank; ++i) {
    for (int j = 0; j < r.n; ++j) want[i] += value(j, displs[r.rank] + i);
  }
  atbtest::expectValues(out.download(), want, "ReduceScatterV");
}

// x of 4n elements in n chunks of 4: chunk i goes to rank i, in rank order.
void allToAll(const Rank& r) {
  const size_t chunk = 4;
  DeviceTensor x(ACL_BF16, {static_cast<int64_t>(r.n), static_cast<int64_t>(chunk)}, valuesOf(r.rank, r.n * chunk));
  DeviceTensor out(ACL_BF16, {static_cast<int64_t>(r.n), static_cast<int64_t>(chunk)});
  Op op(commParam<atb::infer::AllToAllParam>(r));
  atbtest::runOperation(op.op, pack({x.tensor}, {out.tensor}), r.context, r.stream);
  std::vector<double> want;
  for (int j = 0; j < r.n; ++j) {
    for (size_t i = 0; i < chunk; ++i) want.push_back(value(j, r.rank * chunk + i));
  }
  atbtest::expectValues(out.download(), want, "AllToAll");
}

// Rank s sends s + d + 1 elements to rank d.
struct VLayout {
  std::vector<int64_t> sendCounts, sdispls, recvCounts, rdispls;
  int64_t sendTotal = 0, recvTotal = 0;
};

VLayout vlayout(const Rank& r) {
  VLayout l;
  for (int d = 0; d < r.n; ++d) {
    l.sendCounts.push_back(r.rank + d + 1);
    l.sdispls.push_back(l.sendTotal);
    l.sendTotal += r.rank + d + 1;
    l.recvCounts.push_back(d + r.rank + 1);
    l.rdispls.push_back(l.recvTotal);
    l.recvTotal += d + r.rank + 1;
  }
  return l;
}

std::vector<double> vgolden(const Rank& r) {
  std::vector<double> want;
  for (int s = 0; s < r.n; ++s) {
    int64_t offset = 0;  // where rank s's message to this rank starts in its x
    for (int d = 0; d < r.rank; ++d) offset += s + d + 1;
    for (int i = 0; i < s + r.rank + 1; ++i) want.push_back(value(s, offset + i));
  }
  return want;
}

void allToAllV(const Rank& r) {
  const VLayout l = vlayout(r);
  DeviceTensor x(ACL_INT8, {l.sendTotal}, valuesOf(r.rank, l.sendTotal));
  DeviceTensor out(ACL_INT8, {1, l.recvTotal});
  auto p = commParam<atb::infer::AllToAllVParam>(r);
  p.sendCounts = l.sendCounts;
  p.sdispls = l.sdispls;
  p.recvCounts = l.recvCounts;
  p.rdispls = l.rdispls;
  Op op(p);
  atbtest::runOperation(op.op, pack({x.tensor}, {out.tensor}), r.context, r.stream);
  atbtest::expectValues(out.download(), vgolden(r), "AllToAllV");
}

void allToAllVV2(const Rank& r) {
  const VLayout l = vlayout(r);
  DeviceTensor x(ACL_FLOAT, {l.sendTotal}, valuesOf(r.rank, l.sendTotal));
  CountTensor sendCounts(l.sendCounts), sdispls(l.sdispls), recvCounts(l.recvCounts), rdispls(l.rdispls);
  DeviceTensor shape(ACL_FLOAT, {l.recvTotal});
  DeviceTensor out(ACL_FLOAT, {1, l.recvTotal});
  Op op(commParam<atb::infer::AllToAllVV2Param>(r));
  const atb::VariantPack vp = pack(
      {x.tensor, sendCounts.tensor, sdispls.tensor, recvCounts.tensor, rdispls.tensor, shape.tensor}, {out.tensor});
  atb::SVector<atb::TensorDesc> inDescs;
  for (const atb::Tensor& t : vp.inTensors) inDescs.push_back(t.desc);
  atb::SVector<atb::TensorDesc> outDescs;
  EXPECT_OK(op.op->InferShape(inDescs, outDescs));
  EXPECT_TRUE(outDescs.size() == 1 && outDescs[0].shape.dimNum == 2 && outDescs[0].shape.dims[0] == 1 &&
                  outDescs[0].shape.dims[1] == l.recvTotal && outDescs[0].dtype == ACL_FLOAT,
              "AllToAllVV2 InferShape");
  atbtest::runOperation(op.op, vp, r.context, r.stream);
  atbtest::expectValues(out.download(), vgolden(r), "AllToAllVV2");
}

// Pairs (0, 1), (2, 3), ...: the even rank sends first, then receives what its partner sends back.
void sendRecv(const Rank& r) {
  const int partner = r.rank % 2 == 0 ? r.rank + 1 : r.rank - 1;
  if (partner >= r.n) return;
  DeviceTensor mine(ACL_INT64, {2, 3}, valuesOf(r.rank, 6));
  DeviceTensor shapeOf(ACL_INT64, {2, 3}, std::vector<double>(6, 0.0));
  DeviceTensor got(ACL_INT64, {2, 3});
  auto sp = commParam<atb::infer::SendParam>(r);
  sp.destRank = static_cast<uint32_t>(partner);
  auto rp = commParam<atb::infer::RecvParam>(r);
  rp.srcRank = static_cast<uint32_t>(partner);
  Op send(sp), recv(rp);
  const auto doSend = [&] { atbtest::runOperation(send.op, pack({mine.tensor}, {}), r.context, r.stream); };
  const auto doRecv = [&] {
    atbtest::runOperation(recv.op, pack({shapeOf.tensor}, {got.tensor}), r.context, r.stream);
  };
  if (r.rank % 2 == 0) {
    doSend();
    doRecv();
  } else {
    doRecv();
    doSend();
  }
  atbtest::expectValues(got.download(), valuesOf(partner, 6), "Send/Recv from rank " + std::to_string(partner));
}

// LinearParallelOperation: x [m, k] @ weight [n, k] transposed (transWeight, ATB's default) fused with its
// communication. Entries are small integers, so fp16 holds every product and sum exactly.
std::vector<double> smallValues(int seed, size_t count) {
  std::vector<double> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<double>((seed * 3 + static_cast<int>(i)) % 5 - 2);
  return v;
}

std::vector<double> matmulTransposed(const std::vector<double>& x, const std::vector<double>& w, size_t m, size_t k,
                                     size_t n) {
  std::vector<double> y(m * n, 0.0);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      for (size_t t = 0; t < k; ++t) y[i * n + j] += x[i * k + t] * w[j * k + t];
    }
  }
  return y;
}

void linearParallel(const Rank& r) {
  using LP = atb::infer::LinearParallelParam;
  const int64_t m = 2 * r.n, k = 4, n = 3;
  const auto xOf = [&](int j) { return smallValues(j, m * k); };
  const auto wOf = [&](int j) { return smallValues(j + 11, n * k); };
  DeviceTensor x(ACL_FLOAT16, {m, k}, xOf(r.rank));
  DeviceTensor w(ACL_FLOAT16, {n, k}, wOf(r.rank));
  std::vector<double> sum(m * n, 0.0);
  for (int j = 0; j < r.n; ++j) {
    const std::vector<double> part = matmulTransposed(xOf(j), wOf(j), m, k, n);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
  }
  {  // LINEAR_ALL_REDUCE over HCCL: the sum of every rank's x @ w
    DeviceTensor out(ACL_FLOAT16, {m, n});
    auto p = commParam<LP>(r, "hccl");
    p.type = LP::LINEAR_ALL_REDUCE;
    Op op(p);
    atbtest::runOperation(op.op, pack({x.tensor, w.tensor}, {out.tensor}), r.context, r.stream);
    atbtest::expectValues(out.download(), sum, "LinearParallel LINEAR_ALL_REDUCE");
  }
  // ATB's lcoc backend needs a power-of-2 rankSize (CreateOperation refuses 3 ranks, as ATB does).
  if ((r.n & (r.n - 1)) != 0) return;
  {  // LINEAR_REDUCE_SCATTER (lcoc): rank r's m / rankSize rows of that sum
    const int64_t rows = m / r.n;
    DeviceTensor out(ACL_FLOAT16, {rows, n});
    auto p = commParam<LP>(r, "lcoc");
    p.type = LP::LINEAR_REDUCE_SCATTER;
    Op op(p);
    atbtest::runOperation(op.op, pack({x.tensor, w.tensor}, {out.tensor}), r.context, r.stream);
    const auto first = sum.begin() + r.rank * rows * n;
    atbtest::expectValues(out.download(), std::vector<double>(first, first + rows * n),
                          "LinearParallel LINEAR_REDUCE_SCATTER");
  }
  {  // ALL_GATHER_LINEAR with keepIntermediate (lcoc): every rank's x stacked, @ this rank's w; and the stack
    std::vector<double> stacked;
    for (int j = 0; j < r.n; ++j) {
      const std::vector<double> part = xOf(j);
      stacked.insert(stacked.end(), part.begin(), part.end());
    }
    DeviceTensor out(ACL_FLOAT16, {m * r.n, n});
    DeviceTensor gathered(ACL_FLOAT16, {m * r.n, k});
    auto p = commParam<LP>(r, "lcoc");
    p.type = LP::ALL_GATHER_LINEAR;
    p.keepIntermediate = true;
    Op op(p);
    EXPECT_TRUE(op.op->GetInputNum() == 2 && op.op->GetOutputNum() == 2,
                "ALL_GATHER_LINEAR with keepIntermediate takes 2 inputs and gives 2 outputs");
    atbtest::runOperation(op.op, pack({x.tensor, w.tensor}, {out.tensor, gathered.tensor}), r.context, r.stream);
    atbtest::expectValues(out.download(), matmulTransposed(stacked, wOf(r.rank), m * r.n, k, n),
                          "LinearParallel ALL_GATHER_LINEAR");
    atbtest::expectValues(gathered.download(), stacked, "LinearParallel ALL_GATHER_LINEAR intermediate");
  }
}

// Rank 1 expects one element less from rank 0 than rank 0 sends: every rank's Execute fails with ATB's parameter
// error (atb_ops compares every call across ranks before data moves), and the next call works.
void disagreement(const Rank& r) {
  if (r.n < 2) return;
  VLayout l = vlayout(r);
  if (r.rank == 1) {
    l.recvCounts[0] -= 1;
    for (int d = 1; d < r.n; ++d) l.rdispls[d] -= 1;
    l.recvTotal -= 1;
  }
  DeviceTensor x(ACL_FLOAT, {l.sendTotal}, valuesOf(r.rank, l.sendTotal));
  CountTensor sendCounts(l.sendCounts), sdispls(l.sdispls), recvCounts(l.recvCounts), rdispls(l.rdispls);
  DeviceTensor shape(ACL_FLOAT, {l.recvTotal});
  DeviceTensor out(ACL_FLOAT, {1, l.recvTotal});
  Op op(commParam<atb::infer::AllToAllVV2Param>(r));
  const atb::VariantPack vp = pack(
      {x.tensor, sendCounts.tensor, sdispls.tensor, recvCounts.tensor, rdispls.tensor, shape.tensor}, {out.tensor});
  uint64_t workspaceSize = 0;
  EXPECT_OK(op.op->Setup(vp, workspaceSize, r.context));  // each rank's own layout is valid
  EXPECT_STATUS(op.op->Execute(vp, nullptr, 0, r.context), atb::ERROR_INVALID_PARAM);
  allReduce(r, ACL_FLOAT, "sum");
}

void runAll(Rank& r) {
  EXPECT_OK(aclrtSetDevice(r.rank));
  EXPECT_OK(atb::CreateContext(&r.context));
  EXPECT_OK(aclrtCreateStream(&r.stream));
  EXPECT_OK(r.context->SetExecuteStream(r.stream));
  EXPECT_TRUE(r.context->GetExecuteStream() == r.stream, "GetExecuteStream returns the stream set");
  // A communicator lives as long as an operation uses it (then every rank makes the next one together). This one
  // keeps it for the whole run, so ranks that skip a step (Send/Recv without a partner) stay in step.
  DeviceTensor one(ACL_FLOAT, {1}, {1.0});
  Op keeper(commParam<atb::infer::AllReduceParam>(r));
  atbtest::runOperation(keeper.op, pack({one.tensor}, {one.tensor}), r.context, r.stream);
  atbtest::expectValues(one.download(), {static_cast<double>(r.n)}, "AllReduce of ones (in place)");
  for (aclDataType dtype : {ACL_FLOAT16, ACL_FLOAT, ACL_INT8, ACL_BOOL}) allGather(r, dtype);
  allGatherV(r);
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_INT32, ACL_INT64}) {
    allReduce(r, dtype, "sum");
  }
  for (const char* kind : {"max", "min"}) {
    allReduce(r, ACL_FLOAT, kind);
    allReduce(r, ACL_INT16, kind);
  }
  allReduce(r, ACL_FLOAT, "prod");
  allReduce(r, ACL_FLOAT, "sum", /*inPlace=*/true);
  allReduceLaunchedInTwoStages(r);
  // ATB's all_reduce demo: backend "lccl" with ranks as threads (lccl's multi-process form needs a numbered
  // commDomain, and there is no caller's communicator in lccl).
  if (r.mode == atb::infer::COMM_MULTI_THREAD && r.comm == nullptr) allReduce(r, ACL_FLOAT16, "sum", false, "lccl");
  broadcast(r);
  reduceScatter(r);
  reduceScatterV(r);
  allToAll(r);
  allToAllV(r);
  allToAllVV2(r);
  sendRecv(r);
  linearParallel(r);
  disagreement(r);
  EXPECT_OK(atb::DestroyOperation(keeper.op));
  keeper.op = nullptr;
  EXPECT_OK(aclrtDestroyStream(r.stream));
  EXPECT_OK(atb::DestroyContext(r.context));
  EXPECT_OK(aclrtResetDevice(r.rank));
}

// One rank in this process or thread; returns the exit status it earned.
int rankMain(Rank r) {
  try {
    runAll(r);
    std::printf("rank %d: ok, %d checks\n", r.rank, atbtest::checkCount());
    std::fflush(stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: FAILED after %d checks: %s\n", r.rank, atbtest::checkCount(), e.what());
    return 1;
  }
}

int threadsMain(int n, bool ownComms) {
  std::vector<HcclComm> comms(n, nullptr);
  if (ownComms) {
    std::vector<int32_t> devices(n);
    std::iota(devices.begin(), devices.end(), 0);
    if (HcclCommInitAll(n, devices.data(), comms.data()) != HCCL_SUCCESS) {
      std::fprintf(stderr, "HcclCommInitAll failed\n");
      return 1;
    }
  }
  std::vector<int> status(n, 1);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      Rank r;
      r.rank = i;
      r.n = n;
      r.mode = atb::infer::COMM_MULTI_THREAD;
      r.comm = comms[i];
      status[i] = rankMain(r);
    });
  }
  for (auto& t : threads) t.join();
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    failed += status[i] != 0;
    // atb_ops never destroys a caller's communicator: it is still live, and this program destroys it.
    if (ownComms) {
      uint32_t size = 0;
      if (HcclGetRankSize(comms[i], &size) != HCCL_SUCCESS || size != static_cast<uint32_t>(n) ||
          HcclCommDestroy(comms[i]) != HCCL_SUCCESS) {
        std::fprintf(stderr, "rank %d: the program's HcclComm was not left alive by atb_ops\n", i);
        ++failed;
      }
    }
  }
  return failed == 0 ? 0 : 1;
}

// ATB's demos: fork the ranks before any ACL call, wait for every child and check its exit status.
int forkMain(int n) {
  std::vector<pid_t> children;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      Rank r;
      r.rank = i;
      r.n = n;
      if (aclInit(nullptr) != ACL_SUCCESS) std::_Exit(1);
      const int status = rankMain(r);
      std::_Exit(aclFinalize() == ACL_SUCCESS ? status : 1);
    }
    if (pid < 0) {
      std::perror("fork");
      return 1;
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    int wstatus = 0;
    if (waitpid(children[i], &wstatus, 0) != children[i] || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
      std::fprintf(stderr, "fork: rank %d (pid %d) did not exit 0 (wait status %d)\n", i, children[i], wstatus);
      ++failed;
    } else {
      std::printf("fork: rank %d exited 0\n", i);
    }
  }
  return failed == 0 ? 0 : 1;
}

// The root info travels through a file, as HCCL's samples hand theirs over (rank 0 writes it atomically).
bool shareRootInfo(int rank, const std::string& path, HcclRootInfo* info) {
  if (rank == 0) {
    if (HcclGetRootInfo(info) != HCCL_SUCCESS) return false;
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(info->internal, HCCL_ROOT_INFO_BYTES);
    return std::rename(tmp.c_str(), path.c_str()) == 0;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(info->internal, HCCL_ROOT_INFO_BYTES)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int hcclProcMain(int rank, int n, const std::string& rootFile) {
  HcclRootInfo info{};
  HcclComm comm = nullptr;
  if (!shareRootInfo(rank, rootFile, &info) || HcclCommInitRootInfo(n, &info, rank, &comm) != HCCL_SUCCESS) {
    std::fprintf(stderr, "rank %d: the program's own HcclComm could not be made\n", rank);
    return 1;
  }
  Rank r;
  r.rank = rank;
  r.n = n;
  r.comm = comm;
  int status = rankMain(r);
  uint32_t size = 0;
  if (HcclGetRankSize(comm, &size) != HCCL_SUCCESS || size != static_cast<uint32_t>(n) ||
      HcclCommDestroy(comm) != HCCL_SUCCESS) {
    std::fprintf(stderr, "rank %d: the program's HcclComm was not left alive by atb_ops\n", rank);
    status = 1;
  }
  return status;
}

int usage() {
  std::fprintf(stderr,
               "usage: atb_collectives proc <rank> <n> | fork <n> | threads <n> | hccl-proc <rank> <n> <file> | "
               "hccl-threads <n>\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string mode = argv[1];
  if (mode == "fork") return forkMain(std::atoi(argv[2]));
  if (aclInit(nullptr) != ACL_SUCCESS) return 1;
  int status = 2;
  if (mode == "proc" && argc == 4) {
    Rank r;
    r.rank = std::atoi(argv[2]);
    r.n = std::atoi(argv[3]);
    status = rankMain(r);
  } else if (mode == "threads") {
    status = threadsMain(std::atoi(argv[2]), false);
  } else if (mode == "hccl-threads") {
    status = threadsMain(std::atoi(argv[2]), true);
  } else if (mode == "hccl-proc" && argc == 5) {
    status = hcclProcMain(std::atoi(argv[2]), std::atoi(argv[3]), argv[4]);
  } else {
    return usage();
  }
  if (aclFinalize() != ACL_SUCCESS) status = 1;
  return status;
}
