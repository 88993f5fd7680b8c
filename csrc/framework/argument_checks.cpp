#include "framework/argument_checks.h"

#include <sstream>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor_checks.h"

namespace atb_ops::framework::detail {

std::string torchName(c10::ScalarType t) {
  switch (t) {
    case at::kFloat: return "torch.float32";
    case at::kDouble: return "torch.float64";
    case at::kHalf: return "torch.float16";
    case at::kBFloat16: return "torch.bfloat16";
    case at::kChar: return "torch.int8";
    case at::kShort: return "torch.int16";
    case at::kInt: return "torch.int32";
    case at::kLong: return "torch.int64";
    case at::kByte: return "torch.uint8";
    case at::kBool: return "torch.bool";
    default: return std::string("torch.") + c10::toString(t);
  }
}

std::string listOf(c10::IntArrayRef v) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << ']';
  return s.str();
}

void checkTensor(const char* name, const at::Tensor& x) {
  ATB_CHECK(x.defined(), ERROR_INVALID_PARAM, name, " is an undefined tensor");
  checkSupportedDtype(x.scalar_type(), name);
  ATB_CHECK(x.is_contiguous(), ERROR_INVALID_PARAM, name, " must be contiguous, got shape ", listOf(x.sizes()),
            " strides ", listOf(x.strides()));
}

std::vector<int64_t> packed(const std::vector<int64_t>& counts) {
  std::vector<int64_t> displs(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  return displs;
}

}  // namespace atb_ops::framework::detail
