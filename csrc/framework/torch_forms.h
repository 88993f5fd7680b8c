// torch.distributed's forms of the collectives (op_plugin/torch/c10d_backend.cpp): into the caller's tensors. Tensors
// are contiguous (the backend stages strided ones); sizes every rank must share are compared across ranks by the
// communicator, so a rank that passes other sizes fails on every rank. The in-place all_reduce and broadcast are in
// collectives.h.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "framework/collectives.h"

namespace atb_ops::framework {

// all_gather_into_tensor: out (any shape of size * x.numel() elements) holds every rank's x in rank order.
void checkAllGatherInto(int32_t n, const at::Tensor& out, const at::Tensor& x);
void allGatherInto(Communicator& comm, at::Tensor& out, const at::Tensor& x);
// all_gather (tensor list): outs[j] (x's numel and dtype) receives rank j's x.
void checkAllGatherList(int32_t n, const std::vector<at::Tensor>& outs, const at::Tensor& x);
void allGatherList(Communicator& comm, std::vector<at::Tensor>& outs, const at::Tensor& x);
// reduce_scatter (tensor list): ins[j] (out's numel and dtype) is this rank's part for rank j.
void checkReduceScatterList(int32_t n, const at::Tensor& out, const std::vector<at::Tensor>& ins,
                            const std::string& op);
void reduceScatterList(Communicator& comm, at::Tensor& out, const std::vector<at::Tensor>& ins, const std::string& op);
// reduce_scatter_tensor: x holds size * out.numel() elements; out = chunk `rank` of x reduced over the ranks.
void checkReduceScatterInto(int32_t n, const at::Tensor& out, const at::Tensor& x, const std::string& op);
void reduceScatterInto(Communicator& comm, at::Tensor& out, const at::Tensor& x, const std::string& op);
// all_to_all (tensor lists): ins[j] goes to rank j, outs[j] receives rank j's; each pair's size may differ.
// Returns the element layout of the concatenated lists.
AllToAllVLayout checkAllToAllLists(int32_t n, const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& ins);
void allToAllLists(Communicator& comm, std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& ins);
// send / recv: x to rank dst, or from rank src into x; every rank's sizes and dtypes must match its peer's.
void checkPeer(int32_t n, int32_t self, const at::Tensor& x, int64_t peer, const char* name);
void send(Communicator& comm, const at::Tensor& x, int64_t dst, int32_t tag = 0);
void recv(Communicator& comm, at::Tensor& x, int64_t src, int32_t tag = 0);

}  // namespace atb_ops::framework
