// torch dtype -> HcclDataType code, the one table the HCCL backend uses.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>

namespace atb_ops::hccl {

// int8, int16, int32, int64, float16, bfloat16, float32, float64, uint8 map to their HCCL type; bool moves
// as uint8 (one byte, the same bits). Anything else raises ERROR_INVALID_TENSOR_DTYPE naming `what`.
int32_t dataTypeFor(c10::ScalarType t, const std::string& what);

// The list in the error message, also shown by tests and docs.
const char* supportedDtypesText();

}  // namespace atb_ops::hccl
