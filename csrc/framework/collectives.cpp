#include "framework/collectives.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <c10/util/accumulate.h>

#include <limits>
#include <numeric>
#include <utility>

#include "comm/call_signature.h"
#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor_checks.h"
#include "framework/argument_checks.h"
#include "framework/torch_forms.h"

namespace atb_ops::framework {
namespace {

using detail::checkTensor;
using detail::listOf;
using detail::packed;
using detail::torchName;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// A per-rank count array: n entries, none negative.
void checkCounts(const char* name, const std::vector<int64_t>& v, int64_t n) {
  ATB_CHECK(static_cast<int64_t>(v.size()) == n, ERROR_INVALID_PARAM, name, " has ", v.size(), " entries, expected ", n,
            ": ", listOf(v));
  for (int64_t c : v) ATB_CHECK(c >= 0, ERROR_INVALID_PARAM, name, " must be >= 0, got ", listOf(v));
}

int64_t rowNumel(const at::Tensor& x) {
  return c10::multiply_integers(x.sizes().slice(1));
}

std::vector<int64_t> withRows(const at::Tensor& x, int64_t rows) {
  std::vector<int64_t> shape = x.sizes().vec();
  shape[0] = rows;
  return shape;
}

// Rows of a split (given, or dim 0 / n each), checked against the tensor's dim 0; in elements.
std::vector<int64_t> splitElements(const char* name, const Splits& splits, const at::Tensor& t, int32_t n) {
  std::vector<int64_t> rows;
  if (splits) {
    rows = *splits;
    checkCounts(name, rows, n);
  } else {
    ATB_CHECK(t.size(0) % n == 0, ERROR_INVALID_PARAM, name, " is None, so dim 0 of size ", t.size(0),
              " must divide by the group size ", n);
    rows.assign(static_cast<size_t>(n), t.size(0) / n);
  }
  int64_t total = 0;
  for (int64_t r : rows) {
    ATB_CHECK(!__builtin_add_overflow(total, r, &total), ERROR_INVALID_PARAM, "sum(", name,
              ") overflows int64: ", listOf(rows));
  }
  ATB_CHECK(total == t.size(0), ERROR_INVALID_PARAM, "sum(", name, ")=", total, " but dim 0 has ", t.size(0),
            " rows: ", listOf(rows));
  const int64_t row = rowNumel(t);
  for (int64_t& r : rows) {
    ATB_CHECK(row == 0 || r <= kInt64Max / row, ERROR_INVALID_PARAM, name, " ", r, " rows of ", row,
              " elements do not fit int64");
    r *= row;
  }
  return rows;
}

// Row offsets of the blocks (r, e) packed rank-major (r, then e) and expert-major (e, then r).
struct BlockOffsets {
  std::vector<int64_t> rankMajor, expertMajor;
};

BlockOffsets blockOffsets(const std::vector<int64_t>& counts, int32_t n, int64_t experts) {
  BlockOffsets o{std::vector<int64_t>(counts.size()), std::vector<int64_t>(counts.size())};
  int64_t row = 0;
  for (size_t b = 0; b < counts.size(); ++b) o.rankMajor[b] = std::exchange(row, row + counts[b]);
  row = 0;
  for (int64_t e = 0; e < experts; ++e) {
    for (int32_t r = 0; r < n; ++r) {
      const size_t b = static_cast<size_t>(r * experts + e);
      o.expertMajor[b] = std::exchange(row, row + counts[b]);
    }
  }
  return o;
}

// One alltoallv per expert e, every block moving straight to its final rows: rank r's rows for expert e of
// rank q (x, rank-major) into q's rows of expert e from r (expert-major); gather is the same reversed. Every
// rank makes the same number of calls in the same order.
at::Tensor expertExchange(Communicator& comm, const at::Tensor& x, const std::vector<int64_t>& local,
                          const std::vector<int64_t>& global, bool scatter) {
  const int32_t n = comm.size();
  const int64_t experts = static_cast<int64_t>(local.size()) / n;
  const int64_t row = rowNumel(x);
  const BlockOffsets mine = blockOffsets(local, n, experts), theirs = blockOffsets(global, n, experts);
  const std::vector<int64_t>& outCounts = scatter ? global : local;
  const int64_t outRows = std::accumulate(outCounts.begin(), outCounts.end(), int64_t{0});
  at::Tensor out = comm.emptyOutput(withRows(x, outRows), x.options());
  at::Tensor flat = out.view({-1});
  for (int64_t e = 0; e < experts; ++e) {
    AllToAllVLayout layout{std::vector<int64_t>(n), std::vector<int64_t>(n), std::vector<int64_t>(n),
                           std::vector<int64_t>(n)};
    for (int32_t q = 0; q < n; ++q) {
      const size_t b = static_cast<size_t>(q * experts + e);
      // scatter sends local blocks from rank-major x and receives global blocks expert-major; gather the reverse.
      layout.sendCounts[q] = (scatter ? local[b] : global[b]) * row;
      layout.sdispls[q] = (scatter ? mine.rankMajor[b] : theirs.expertMajor[b]) * row;
      layout.recvCounts[q] = (scatter ? global[b] : local[b]) * row;
      layout.rdispls[q] = (scatter ? theirs.expertMajor[b] : mine.rankMajor[b]) * row;
    }
    validateLayout(layout, n, x.numel(), out.numel());
    comm.alltoallv(x, layout, flat);
  }
  return out;
}

}  // namespace

void checkAllToAllV(int32_t n, const at::Tensor& x, const AllToAllVLayout& l) {
  checkTensor("x", x);
  checkCounts("send_counts", l.sendCounts, n);
  checkCounts("sdispls", l.sdispls, n);
  checkCounts("recv_counts", l.recvCounts, n);
  checkCounts("rdispls", l.rdispls, n);
  validateLayout(l, n, x.numel());
}

at::Tensor allToAllV(Communicator& comm, const at::Tensor& x, const AllToAllVLayout& layout) {
  const CallLabel label("all_to_all_v");
  checkAllToAllV(comm.size(), x, layout);
  at::Tensor out = comm.emptyOutput({layout.totalRecv()}, x.options());
  comm.alltoallv(x, layout, out);
  return out;
}

AllToAllVLayout checkAlltoallSingle(int32_t n, const at::Tensor& out, const at::Tensor& in, const Splits& outSplits,
                                    const Splits& inSplits) {
  checkTensor("in_tensor", in);
  ATB_CHECK(out.defined(), ERROR_INVALID_PARAM, "out_tensor is an undefined tensor");
  ATB_CHECK(out.scalar_type() == in.scalar_type(), ERROR_INVALID_TENSOR_DTYPE, "out_tensor dtype ",
            torchName(out.scalar_type()), " differs from in_tensor dtype ", torchName(in.scalar_type()));
  ATB_CHECK(out.device() == in.device(), ERROR_INVALID_PARAM, "out_tensor is on ", out.device(), " but in_tensor on ",
            in.device());
  ATB_CHECK(in.dim() > 0 && out.dim() > 0, ERROR_INVALID_PARAM,
            "alltoall_single splits dim 0: in_tensor and out_tensor need at least 1 dimension");
  ATB_CHECK(in.sizes().slice(1) == out.sizes().slice(1), ERROR_INVALID_PARAM, "in_tensor rows ",
            listOf(in.sizes().slice(1)), " and out_tensor rows ", listOf(out.sizes().slice(1)), " differ in shape");
  const std::vector<int64_t> send = splitElements("in_split_sizes", inSplits, in, n);
  const std::vector<int64_t> recv = splitElements("out_split_sizes", outSplits, out, n);
  AllToAllVLayout layout{send, packed(send), recv, packed(recv)};
  validateLayout(layout, n, in.numel(), out.numel());
  return layout;
}

void alltoallSingle(Communicator& comm, at::Tensor& out, const at::Tensor& in, const Splits& outSplits,
                    const Splits& inSplits) {
  const CallLabel label("alltoall_single");
  const AllToAllVLayout layout = checkAlltoallSingle(comm.size(), out, in, outSplits, inSplits);
  if (out.is_contiguous() && !mayOverlap(out, in)) {
    at::Tensor flat = out.view({-1});
    comm.alltoallv(in, layout, flat);
    return;
  }
  // Written while read, or strided: through a temporary, then one copy.
  at::Tensor staged = at::empty({out.numel()}, out.options());
  comm.alltoallv(in, layout, staged);
  out.copy_(staged.view(out.sizes()));
}

void checkAllToAll(int32_t n, const at::Tensor& x) {
  ATB_CHECK(x.defined() && x.dim() > 0, ERROR_INVALID_PARAM, "all_to_all needs x with at least 1 dimension, got shape ",
            x.defined() ? x.sizes() : c10::IntArrayRef{});
  checkSupportedDtype(x.scalar_type(), "x");
  ATB_CHECK(x.size(0) % n == 0, ERROR_INVALID_PARAM, "all_to_all splits x's dim 0 equally: x.shape[0] is ", x.size(0),
            " (x.shape ", x.sizes(), "), which does not divide by the group size ", n);
}

at::Tensor allToAll(Communicator& comm, const at::Tensor& x) {
  const CallLabel label("all_to_all");
  const int32_t n = comm.size();
  checkAllToAll(n, x);
  const at::Tensor c = x.contiguous();  // as DeepSpeed does
  const std::vector<int64_t> counts(static_cast<size_t>(n), c.numel() / n);
  const std::vector<int64_t> displs = packed(counts);
  at::Tensor out = comm.emptyOutput(c.sizes(), c.options());
  at::Tensor flat = out.view({-1});
  comm.alltoallv(c, AllToAllVLayout{counts, displs, counts, displs}, flat);
  return out;
}

void checkExperts(int32_t n, const at::Tensor& x, const std::vector<int64_t>& local, const std::vector<int64_t>& global,
                  bool scatter) {
  checkTensor("x", x);
  ATB_CHECK(x.dim() > 0, ERROR_INVALID_PARAM, "x must have rows (at least 1 dimension)");
  ATB_CHECK(local.size() == global.size() && !local.empty() && local.size() % static_cast<size_t>(n) == 0,
            ERROR_INVALID_PARAM, "local_count (", local.size(), " entries) and global_count (", global.size(),
            " entries) must both have n_expert * world_size entries, world_size=", n);
  const int64_t row = rowNumel(x);
  int64_t sums[2] = {0, 0};
  const std::vector<int64_t>* arrays[2] = {&local, &global};
  const char* names[2] = {"local_count", "global_count"};
  for (int k = 0; k < 2; ++k) {
    for (int64_t c : *arrays[k]) {
      ATB_CHECK(c >= 0, ERROR_INVALID_PARAM, names[k], " must be >= 0, got ", listOf(*arrays[k]));
      ATB_CHECK(!__builtin_add_overflow(sums[k], c, &sums[k]), ERROR_INVALID_PARAM, "sum(", names[k],
                ") does not fit int64: ", listOf(*arrays[k]));
    }
    // Offsets in elements (rows x row size) must fit int64 too.
    ATB_CHECK(row == 0 || sums[k] <= kInt64Max / row, ERROR_INVALID_PARAM, "sum(", names[k], ")=", sums[k], " rows of ",
              row, " elements does not fit int64");
  }
  const int64_t want = scatter ? sums[0] : sums[1];
  ATB_CHECK(x.size(0) == want, ERROR_INVALID_PARAM, "x has ", x.size(0), " rows but sum(",
            scatter ? "local_count" : "global_count", ")=", want);
}

at::Tensor globalScatter(Communicator& comm, const at::Tensor& x, const std::vector<int64_t>& local,
                         const std::vector<int64_t>& global) {
  const CallLabel label("global_scatter");
  checkExperts(comm.size(), x, local, global, true);
  return expertExchange(comm, x, local, global, true);
}

at::Tensor globalGather(Communicator& comm, const at::Tensor& x, const std::vector<int64_t>& local,
                        const std::vector<int64_t>& global) {
  const CallLabel label("global_gather");
  checkExperts(comm.size(), x, local, global, false);
  return expertExchange(comm, x, local, global, false);
}

void checkAllGather(const at::Tensor& x) {
  checkTensor("x", x);
  ATB_CHECK(x.dim() > 0, ERROR_INVALID_PARAM, "all_gather concatenates on dim 0: x needs at least 1 dimension");
}

at::Tensor allGather(Communicator& comm, const at::Tensor& x) {
  const CallLabel label("all_gather");
  checkAllGather(x);
  at::Tensor out = comm.emptyOutput(withRows(x, x.size(0) * comm.size()), x.options());
  allGatherInto(comm, out, x);
  return out;
}

ReduceOp checkReduction(const at::Tensor& x, const std::string& op) {
  checkTensor("x", x);
  ATB_CHECK(op == "sum" || op == "prod" || op == "max" || op == "min", ERROR_INVALID_PARAM,
            "op must be one of ('sum', 'prod', 'max', 'min'), got '", op, "'");
  return parseReduceOp(op, "op");
}

at::Tensor allReduce(Communicator& comm, const at::Tensor& x, const std::string& op) {
  const CallLabel label("all_reduce");
  const ReduceOp reduce = checkReduction(x, op);
  at::Tensor out = comm.emptyOutput(x.sizes(), x.options());
  comm.allreduce(x, out, reduce);
  return out;
}

void allReduceInPlace(Communicator& comm, at::Tensor& x, const std::string& op) {
  const CallLabel label("all_reduce");
  const ReduceOp reduce = checkReduction(x, op);
  comm.allreduce(x, x, reduce);  // recv may be send itself (communicator.h)
}

void checkReduceScatter(int32_t n, const at::Tensor& x, const std::string& op) {
  checkReduction(x, op);
  ATB_CHECK(x.dim() > 0 && x.size(0) % n == 0, ERROR_INVALID_PARAM, "reduce_scatter splits dim 0 equally: shape ",
            listOf(x.sizes()), " does not divide by group size ", n);
}

at::Tensor reduceScatter(Communicator& comm, const at::Tensor& x, const std::string& op) {
  const CallLabel label("reduce_scatter");
  checkReduceScatter(comm.size(), x, op);
  at::Tensor out = comm.emptyOutput(withRows(x, x.size(0) / comm.size()), x.options());
  reduceScatterInto(comm, out, x, op);
  return out;
}

void checkBroadcast(int32_t n, const at::Tensor& x, int64_t src) {
  checkTensor("x", x);
  ATB_CHECK(src >= 0 && src < n, ERROR_INVALID_PARAM, "src must be a rank in [0, ", n, "), got ", src);
}

at::Tensor broadcast(Communicator& comm, const at::Tensor& x, int64_t src) {
  const CallLabel label("broadcast");
  checkBroadcast(comm.size(), x, src);
  at::Tensor out = comm.emptyOutput(x.sizes(), x.options());
  if (comm.rank() == src) out.copy_(x);
  broadcastInPlace(comm, out, src);
  return out;
}

void broadcastInPlace(Communicator& comm, at::Tensor& x, int64_t src) {
  const CallLabel label("broadcast");
  checkBroadcast(comm.size(), x, src);
  comm.broadcast(x, static_cast<int32_t>(src));
}

}  // namespace atb_ops::framework
