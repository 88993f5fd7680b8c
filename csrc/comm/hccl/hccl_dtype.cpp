#include "comm/hccl/hccl_dtype.h"

#include "comm/hccl/hccl_api.h"
#include "core/status.h"

namespace atb_ops::hccl {

int32_t dataTypeFor(c10::ScalarType t, const std::string& what) {
  switch (t) {
    case c10::ScalarType::Char: return dtype::kInt8;
    case c10::ScalarType::Short: return dtype::kInt16;
    case c10::ScalarType::Int: return dtype::kInt32;
    case c10::ScalarType::Long: return dtype::kInt64;
    case c10::ScalarType::Half: return dtype::kFp16;
    case c10::ScalarType::BFloat16: return dtype::kBfp16;
    case c10::ScalarType::Float: return dtype::kFp32;
    case c10::ScalarType::Double: return dtype::kFp64;
    case c10::ScalarType::Byte: return dtype::kUint8;
    // HCCL has no bool type; a collective only moves bytes, and torch's bool is one byte.
    case c10::ScalarType::Bool: return dtype::kUint8;
    default:
      ATB_FAIL(ERROR_INVALID_TENSOR_DTYPE, what, " has dtype ", c10::toString(t),
               ", which backend 'hccl' cannot move; supported: ", supportedDtypesText());
  }
}

const char* supportedDtypesText() {
  return "int8, int16, int32, int64, float16, bfloat16, float32, float64, uint8, bool (as uint8)";
}

}  // namespace atb_ops::hccl
