// The dtypes every backend moves, and the check that names an unsupported one.
#pragma once

#include <c10/core/ScalarType.h>

#include <string>

namespace atb_ops {

// int8, int16, int32, int64, float16, bfloat16, float32 (ATB's list), plus uint8, bool, float64.
bool isSupportedDtype(c10::ScalarType t);

// Raises ERROR_INVALID_TENSOR_DTYPE naming `what` and the dtype.
void checkSupportedDtype(c10::ScalarType t, const std::string& what);

}  // namespace atb_ops
