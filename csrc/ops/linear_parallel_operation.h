// LinearParallelOperation: ATB's matmul fused with its communication (all-reduce, reduce-scatter, all-gather,
// the 2-D TP all-gather + reduce-scatter, and the MoE AllToAllvc dispatch / combine), quantised or not.
//   param  : LinearParallelParam (linear_parallel_param.h)
//   inputs : ATB's per param (linear_parallel_plan.h: x, weight, [bias, deqScale], [residual], [perTokenScale],
//            [globalTokensPerExpertMatrix, maxOutputSize])
//   outputs: the result; with keepIntermediate also the gathered x
#pragma once

#include <memory>

#include "ops/linear_parallel_param.h"
#include "ops/operation_base.h"

namespace atb_ops {

// The operation for a param that validateLinearParallelParam accepted (the C++ API's CreateOperation); raises
// ERROR_INVALID_PARAM like set_param otherwise.
std::unique_ptr<Operation> makeLinearParallelOperation(const LinearParallelParam& param);

}  // namespace atb_ops
