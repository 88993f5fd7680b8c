#include "core/dtype.h"

#include "core/status.h"

namespace atb_ops {

bool isSupportedDtype(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Char:
    case c10::ScalarType::Short:
    case c10::ScalarType::Int:
    case c10::ScalarType::Long:
    case c10::ScalarType::Half:
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Float:
    case c10::ScalarType::Byte:
    case c10::ScalarType::Bool:
    case c10::ScalarType::Double: return true;
    default: return false;
  }
}

void checkSupportedDtype(c10::ScalarType t, const std::string& what) {
  ATB_CHECK(isSupportedDtype(t), ERROR_INVALID_TENSOR_DTYPE, what, " has dtype ", c10::toString(t),
            "; supported: int8, int16, int32, int64, float16, bfloat16, float32, uint8, bool, float64");
}

}  // namespace atb_ops
