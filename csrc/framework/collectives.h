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

// In place (torch.distributed's all_reduce and broadcast; its other forms are in torch_forms.h): tensors are
// contiguous (the backend stages strided ones).

// all_reduce: x reduced over the ranks, in place.
void allReduceInPlace(Communicator& comm, at::Tensor& x, const std::string& op);
// broadcast: rank src's x written into every rank's x.
void broadcastInPlace(Communicator& comm, at::Tensor& x, int64_t src);

}  // namespace atb_ops::framework
