#include "framework/collectives.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <c10/util/accumulate.h>

#include <limits>
#include <numeric>
#include <sstream>
#include <utility>

#include "comm/call_signature.h"
#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor_checks.h"

namespace atb_ops::framework {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// torch's spelling of a dtype ("torch.float32"), as Python users read it.
std::string torchName(c10::ScalarType t) {
  switch (t) {
    case at::kFloat: return "torch.float32";
    case at::kDouble: return "torch.float64";
    case at::kHalf: return "torch.float16";
    case at::kBFloat16: return "torch.bfloat16";
    case at::kChar: return "torch.int8";
    case at::kShort: return "torch.int16";
    case at::kInt: return "torch.int32";
    case at::kLong: return "torch.int64";
    case at::kByte: return "torch.uint8";
    case at::kBool: return "torch.bool";
    default: return std::string("torch.") + c10::toString(t);
  }
}

// "[1, 2, 3]", as Python prints a list.
std::string listOf(c10::IntArrayRef v) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << ']';
  return s.str();
}

void checkTensor(const char* name, const at::Tensor& x) {
  ATB_CHECK(x.defined(), ERROR_INVALID_PARAM, name, " is an undefined tensor");
  checkSupportedDtype(x.scalar_type(), name);
  ATB_CHECK(x.is_contiguous(), ERROR_INVALID_PARAM, name, " must be contiguous, got shape ", listOf(x.sizes()),
            " strides ", listOf(x.strides()));
}

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

std::vector<int64_t> packed(const std::vector<int64_t>& counts) {
  std::vector<int64_t> displs(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  return displs;
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
  ATB_CHECK(x.defined() && x.dim() > 0, ERROR_INVALID_PARAM, "all_to_all needs a tensor with at least 1 dimension");
  checkSupportedDtype(x.scalar_type(), "x");
  ATB_CHECK(x.size(0) % n == 0, ERROR_INVALID_PARAM, "all_to_all splits dim 0 equally: size ", x.size(0),
            " does not divide by group size ", n);
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

// --- torch.distributed's forms ---

void checkAllGatherInto(int32_t n, const at::Tensor& out, const at::Tensor& x) {
  checkTensor("input_tensor", x);
  checkTensor("output_tensor", out);
  ATB_CHECK(out.scalar_type() == x.scalar_type(), ERROR_INVALID_TENSOR_DTYPE, "output_tensor dtype ",
            torchName(out.scalar_type()), " differs from input_tensor dtype ", torchName(x.scalar_type()));
  ATB_CHECK(out.device() == x.device(), ERROR_INVALID_PARAM, "output_tensor is on ", out.device(),
            " but input_tensor on ", x.device());
  ATB_CHECK(out.numel() == x.numel() * n, ERROR_INVALID_PARAM, "output_tensor must hold group size ", n,
            " x input_tensor's ", x.numel(), " elements = ", x.numel() * n, ", got shape ", listOf(out.sizes()), " (",
            out.numel(), " elements)");
}

void allGatherInto(Communicator& comm, at::Tensor& out, const at::Tensor& x) {
  const CallLabel label("all_gather_into_tensor");
  checkAllGatherInto(comm.size(), out, x);
  // An input that is this rank's chunk of the output (FSDP gathers in place) is read while written: a copy.
  const at::Tensor send = mayOverlap(out, x) ? x.clone() : x;
  at::Tensor flat = out.view({-1});
  comm.allgather(send, flat);
}

// One tensor of a per-rank list: defined, x's dtype and element count (any shape, as torch allows).
void checkListEntry(const char* list, size_t i, const at::Tensor& t, const at::Tensor& like, const char* likeName) {
  const std::string name = std::string(list) + "[" + std::to_string(i) + "]";
  ATB_CHECK(t.defined(), ERROR_INVALID_PARAM, name, " is an undefined tensor");
  ATB_CHECK(t.scalar_type() == like.scalar_type(), ERROR_INVALID_TENSOR_DTYPE, name, " dtype ",
            torchName(t.scalar_type()), " differs from ", likeName, " dtype ", torchName(like.scalar_type()));
  ATB_CHECK(t.numel() == like.numel(), ERROR_INVALID_PARAM, name, " has shape ", listOf(t.sizes()), " (", t.numel(),
            " elements) but ", likeName, " has ", like.numel(), " elements ", listOf(like.sizes()));
}

void checkListLength(const char* list, size_t got, int32_t n) {
  ATB_CHECK(static_cast<int64_t>(got) == n, ERROR_INVALID_PARAM, list, " must hold one tensor per rank (group size ", n,
            "), got ", got);
}

void checkAllGatherList(int32_t n, const std::vector<at::Tensor>& outs, const at::Tensor& x) {
  checkTensor("tensor", x);
  checkListLength("tensor_list", outs.size(), n);
  for (size_t i = 0; i < outs.size(); ++i) checkListEntry("tensor_list", i, outs[i], x, "tensor");
}

void allGatherList(Communicator& comm, std::vector<at::Tensor>& outs, const at::Tensor& x) {
  const CallLabel label("all_gather_list");
  checkAllGatherList(comm.size(), outs, x);
  at::Tensor all = at::empty({x.numel() * comm.size()}, x.options());
  comm.allgather(x, all);
  for (size_t i = 0; i < outs.size(); ++i) {
    outs[i].copy_(all.narrow(0, static_cast<int64_t>(i) * x.numel(), x.numel()).view(outs[i].sizes()));
  }
}

void checkReduceScatterList(int32_t n, const at::Tensor& out, const std::vector<at::Tensor>& ins,
                            const std::string& op) {
  checkReduction(out, op);
  checkListLength("input_list", ins.size(), n);
  for (size_t i = 0; i < ins.size(); ++i) checkListEntry("input_list", i, ins[i], out, "output");
}

void reduceScatterList(Communicator& comm, at::Tensor& out, const std::vector<at::Tensor>& ins, const std::string& op) {
  const CallLabel label("reduce_scatter_list");
  checkReduceScatterList(comm.size(), out, ins, op);
  std::vector<at::Tensor> flats;
  for (const at::Tensor& t : ins) flats.push_back(t.reshape({-1}));
  const at::Tensor x = at::cat(flats);
  at::Tensor flat = out.view({-1});
  comm.reduceScatter(x, flat, parseReduceOp(op, "op"));
}

void checkReduceScatterInto(int32_t n, const at::Tensor& out, const at::Tensor& x, const std::string& op) {
  checkReduction(x, op);
  checkTensor("output", out);
  ATB_CHECK(out.scalar_type() == x.scalar_type(), ERROR_INVALID_TENSOR_DTYPE, "output dtype ",
            torchName(out.scalar_type()), " differs from input dtype ", torchName(x.scalar_type()));
  ATB_CHECK(out.device() == x.device(), ERROR_INVALID_PARAM, "output is on ", out.device(), " but input on ",
            x.device());
  ATB_CHECK(x.numel() == out.numel() * n, ERROR_INVALID_PARAM, "input must hold group size ", n, " x output's ",
            out.numel(), " elements = ", out.numel() * n, ", got shape ", listOf(x.sizes()), " (", x.numel(),
            " elements)");
}

void reduceScatterInto(Communicator& comm, at::Tensor& out, const at::Tensor& x, const std::string& op) {
  const CallLabel label("reduce_scatter_tensor");
  checkReduceScatterInto(comm.size(), out, x, op);
  const at::Tensor send = mayOverlap(out, x) ? x.clone() : x;
  at::Tensor flat = out.view({-1});
  comm.reduceScatter(send, flat, parseReduceOp(op, "op"));
}

AllToAllVLayout checkAllToAllLists(int32_t n, const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& ins) {
  ATB_CHECK(static_cast<int64_t>(ins.size()) == n && static_cast<int64_t>(outs.size()) == n, ERROR_INVALID_PARAM,
            "all_to_all needs one input and one output tensor per rank (group size ", n, "), got ", ins.size(),
            " inputs and ", outs.size(), " outputs");
  std::vector<int64_t> send(static_cast<size_t>(n)), recv(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    checkTensor(("input_tensor_list[" + std::to_string(i) + "]").c_str(), ins[i]);
    ATB_CHECK(outs[i].defined(), ERROR_INVALID_PARAM, "output_tensor_list[", i, "] is an undefined tensor");
    ATB_CHECK(ins[i].scalar_type() == ins[0].scalar_type() && outs[i].scalar_type() == ins[0].scalar_type(),
              ERROR_INVALID_TENSOR_DTYPE, "all_to_all tensors must share one dtype: input_tensor_list[0] is ",
              torchName(ins[0].scalar_type()), ", input_tensor_list[", i, "] ", torchName(ins[i].scalar_type()),
              ", output_tensor_list[", i, "] ", torchName(outs[i].scalar_type()));
    send[i] = ins[i].numel();
    recv[i] = outs[i].numel();
  }
  AllToAllVLayout layout{send, packed(send), recv, packed(recv)};
  validateLayout(layout, n, layout.sdispls[n - 1] + send[n - 1], layout.rdispls[n - 1] + recv[n - 1]);
  return layout;
}

void allToAllLists(Communicator& comm, std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& ins) {
  const CallLabel label("all_to_all");
  const AllToAllVLayout layout = checkAllToAllLists(comm.size(), outs, ins);
  std::vector<at::Tensor> flats;
  for (const at::Tensor& t : ins) flats.push_back(t.view({-1}));
  const at::Tensor send = at::cat(flats);
  at::Tensor recv = at::empty({layout.totalRecv()}, send.options());
  comm.alltoallv(send, layout, recv);
  for (size_t i = 0; i < outs.size(); ++i) {
    outs[i].copy_(recv.narrow(0, layout.rdispls[i], layout.recvCounts[i]).view(outs[i].sizes()));
  }
}

void checkPeer(int32_t n, int32_t self, const at::Tensor& x, int64_t peer, const char* name) {
  checkTensor("tensor", x);
  ATB_CHECK(peer >= 0 && peer < n, ERROR_INVALID_PARAM, name, " must be a rank in [0, ", n, "), got ", peer);
  ATB_CHECK(peer != self, ERROR_INVALID_PARAM, name, " is this rank (", self, "): a rank cannot send to itself");
}

void send(Communicator& comm, const at::Tensor& x, int64_t dst) {
  checkPeer(comm.size(), comm.rank(), x, dst, "dst");
  comm.send(x, static_cast<int32_t>(dst));
}

void recv(Communicator& comm, at::Tensor& x, int64_t src) {
  checkPeer(comm.size(), comm.rank(), x, src, "src");
  comm.recv(x, static_cast<int32_t>(src));
}

}  // namespace atb_ops::framework
