// The framework collectives (atb_ops.distributed's Paddle / DeepSpeed / MindSpore calls): ONE function each
// that checks its arguments and runs, called by every entry (the torch.ops.atb_ops ops, their direct path
// from Python, and any later surface). Errors name the argument as the Python API calls it and its values
// (ERROR_INVALID_PARAM and friends), before any communication. Each has a check that needs only the group
// size, for callers whose communicator does not exist yet (making it is itself a collective). Every call is
// labelled with its framework name, so ranks that call different things fail together (call_signature.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/layout.h"
#include "core/reduce.h"

namespace atb_ops::framework {

using Splits = std::optional<std::vector<int64_t>>;

// all_to_all_v: ATB's AllToAllVV2 over a group; a new 1-D output of sum(recv_counts) elements.
void checkAllToAllV(int32_t n, const at::Tensor& x, const AllToAllVLayout& layout);
at::Tensor allToAllV(Communicator& comm, const at::Tensor& x, const AllToAllVLayout& layout);

// alltoall_single: Paddle's rows of dim 0 (nullopt: equal splits), written into `out` (through a temporary
// when it overlaps `in`). The check returns the element layout.
AllToAllVLayout checkAlltoallSingle(int32_t n, const at::Tensor& out, const at::Tensor& in, const Splits& outSplits,
                                    const Splits& inSplits);
void alltoallSingle(Communicator& comm, at::Tensor& out, const at::Tensor& in, const Splits& outSplits,
                    const Splits& inSplits);

// all_to_all: DeepSpeed's equal splits of dim 0; x's shape.
void checkAllToAll(int32_t n, const at::Tensor& x);
at::Tensor allToAll(Communicator& comm, const at::Tensor& x);

// global_scatter / global_gather: Paddle / FastMoE expert exchange; local[i] rows go to expert i % E of rank
// i / E (E = local.size() / n). Output rows: expert-major, then source rank (scatter); back in x's order
// (gather).
void checkExperts(int32_t n, const at::Tensor& x, const std::vector<int64_t>& local, const std::vector<int64_t>& global,
                  bool scatter);
at::Tensor globalScatter(Communicator& comm, const at::Tensor& x, const std::vector<int64_t>& local,
                         const std::vector<int64_t>& global);
at::Tensor globalGather(Communicator& comm, const at::Tensor& x, const std::vector<int64_t>& local,
                        const std::vector<int64_t>& global);

// all_gather: MindSpore's, concatenated on dim 0 in rank order.
void checkAllGather(const at::Tensor& x);
at::Tensor allGather(Communicator& comm, const at::Tensor& x);

// all_reduce / reduce_scatter: op "sum", "prod", "max" or "min"; reduce_scatter splits dim 0.
ReduceOp checkReduction(const at::Tensor& x, const std::string& op);
at::Tensor allReduce(Communicator& comm, const at::Tensor& x, const std::string& op);
void checkReduceScatter(int32_t n, const at::Tensor& x, const std::string& op);
at::Tensor reduceScatter(Communicator& comm, const at::Tensor& x, const std::string& op);

// broadcast: rank `src`'s x on every rank, as a new tensor.
void checkBroadcast(int32_t n, const at::Tensor& x, int64_t src);
at::Tensor broadcast(Communicator& comm, const at::Tensor& x, int64_t src);

// torch.distributed's forms (the c10d backend "atb_ops", op_plugin/torch/c10d_backend.cpp): into the caller's
// tensors, in place where torch writes in place. The forms above are these with a fresh output. Tensors are
// contiguous (the backend stages strided ones); sizes every rank must share are compared across ranks by the
// communicator, so a rank that passes other sizes fails on every rank.

// all_reduce: x reduced over the ranks, in place.
void allReduceInPlace(Communicator& comm, at::Tensor& x, const std::string& op);
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
// broadcast: rank src's x written into every rank's x.
void broadcastInPlace(Communicator& comm, at::Tensor& x, int64_t src);
// all_to_all (tensor lists): ins[j] goes to rank j, outs[j] receives rank j's; each pair's size may differ.
// Returns the element layout of the concatenated lists.
AllToAllVLayout checkAllToAllLists(int32_t n, const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& ins);
void allToAllLists(Communicator& comm, std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& ins);
// send / recv: x to rank dst, or from rank src into x; every rank's sizes and dtypes must match its peer's.
void checkPeer(int32_t n, int32_t self, const at::Tensor& x, int64_t peer, const char* name);
void send(Communicator& comm, const at::Tensor& x, int64_t dst);
void recv(Communicator& comm, at::Tensor& x, int64_t src);

}  // namespace atb_ops::framework
