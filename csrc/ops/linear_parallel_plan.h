// Every check LinearParallelOperation makes on its inputs, in one const function that returns the plan of the
// call: the outputs' descriptions and everything run() needs (which input is which, the matmul's sizes and
// dequantisation, the communication layouts). It reads the param and the inputs only, so one operation shared
// by threads never mixes two calls.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "core/layout.h"
#include "core/tensor_checks.h"
#include "ops/linear_parallel_compute.h"
#include "ops/linear_parallel_moe.h"
#include "ops/linear_parallel_param.h"

namespace atb_ops {

// Indices of the inputs in ATB's order; -1 where this param takes none.
struct LinearParallelInputs {
  int x = 0;
  int weight = 1;
  int bias = -1;        // quantised: the dequant offset (W8A8: int32 bias; W8A16: weight offset); may be empty
  int scale = -1;       // quantised: deqScale
  int residual = -1;    // hasResidual
  int tokenScale = -1;  // per token: float32, one per row of x
  int matrix = -1;      // MoE: globalTokensPerExpertMatrix
  int maxOutput = -1;   // MoE: its length is the output's rows (type 5) / the output's rows (type 6)
};

struct LinearParallelPlan {
  std::vector<TensorDesc> outputs;  // ATB's: the result, then (keepIntermediate) the gathered x
  LinearParallelInputs in;
  LinearMath math = LinearMath::kFloat;
  c10::ScalarType outDtype = c10::ScalarType::Half;
  int64_t rows = 0;  // rows of x (all leading dims flattened)
  int64_t k = 0;
  int64_t n = 0;
  bool hasBias = false;  // the optional dequant offset is present (not empty)

  // ALL_GATHER_LINEAR_REDUCE_SCATTER: x to the ag group (elements of x), the matmul result's chunks to the rs
  // group (elements of the result; a rank receives its chunk from every rs member, rank-major, then sums).
  AllToAllVLayout agGather;
  AllToAllVLayout rsScatter;
  int64_t rsMembers = 0;

  // MoE: the token layout (rows) and the row counts of the output.
  MoeLayout moe;
  int64_t limit = 0;       // rows an owner keeps (type 5: maxOutputSize; type 6: x's rows)
  int64_t outputRows = 0;  // rows of the output
};

// Raises ATB's error names (ERROR_INVALID_IN_TENSOR_NUM, _TENSOR_DIM, _TENSOR_DIM_NUM, _TENSOR_DTYPE,
// _TENSOR_INI_MATCH for a dtype combination outside ATB's table, _TENSOR_SIZE, ERROR_INVALID_PARAM) naming the
// input and its values.
LinearParallelPlan planLinearParallel(const LinearParallelParam& p, const std::vector<at::Tensor>& inputs);

}  // namespace atb_ops
