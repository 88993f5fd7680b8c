// torch.distributed's forms of the collectives (the c10d backend "atb_ops", op_plugin/torch/c10d_backend.cpp): into
// the caller's tensors, in place where torch writes in place, over the same Communicator as collectives.cpp.
#include "framework/torch_forms.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>

#include <utility>

#include "comm/call_signature.h"
#include "core/status.h"
#include "core/tensor_checks.h"
#include "framework/argument_checks.h"

namespace atb_ops::framework {

using detail::checkTensor;
using detail::listOf;
using detail::packed;
using detail::torchName;

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

void send(Communicator& comm, const at::Tensor& x, int64_t dst, int32_t tag) {
  checkPeer(comm.size(), comm.rank(), x, dst, "dst");
  comm.send(x, static_cast<int32_t>(dst), tag);
}

void recv(Communicator& comm, at::Tensor& x, int64_t src, int32_t tag) {
  checkPeer(comm.size(), comm.rank(), x, src, "src");
  comm.recv(x, static_cast<int32_t>(src), tag);
}

}  // namespace atb_ops::framework
