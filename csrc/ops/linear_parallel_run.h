// Runs a checked LinearParallelOperation call: the plan (linear_parallel_plan.h) and the param are all it reads.
// The matmuls are ATen ops on x's device (linear_parallel_compute.h); the communication goes through the
// communicator of the param (comm/communicator.h): all-reduce, reduce-scatter, all-gather, and alltoallv for the
// 2-D TP groups and the MoE tokens.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "ops/linear_parallel_param.h"
#include "ops/linear_parallel_plan.h"

namespace atb_ops {

class Communicator;

// Whether this param communicates at all (PURE_LINEAR does not, and makes no communicator).
bool linearParallelCommunicates(const LinearParallelParam& p);

// Writes every element of `outputs` (contiguous, of the plan's shapes and dtypes, on x's device). `comm` is null
// when the param does not communicate.
void runLinearParallel(const LinearParallelParam& p, const LinearParallelPlan& plan,
                       const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs, Communicator* comm);

}  // namespace atb_ops
