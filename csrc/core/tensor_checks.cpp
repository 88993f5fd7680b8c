#include "core/tensor_checks.h"

#include <algorithm>

#include "core/status.h"

namespace atb_ops {
namespace {

// [first, last) byte range a tensor may touch inside its storage.
std::pair<int64_t, int64_t> byteSpan(const at::Tensor& t) {
  const int64_t es = t.element_size();
  int64_t lo = t.storage_offset();
  int64_t hi = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return {0, 0};
    const int64_t reach = (t.size(d) - 1) * t.stride(d);
    if (reach < 0) {
      lo += reach;
    } else {
      hi += reach;
    }
  }
  return {lo * es, (hi + 1) * es};
}

}  // namespace

void checkOutput(const at::Tensor& out, const TensorDesc& want, const c10::Device& device, const std::string& op,
                 size_t index) {
  const std::string which = index == 0 ? " output" : " output " + std::to_string(index);
  ATB_CHECK(out.defined(), ERROR_INVALID_PARAM, op, which, " is an undefined tensor");
  // ATB's operators' SetupCheckImpl answer ERROR_INVALID_TENSOR_DIM for an output of another shape.
  ATB_CHECK(out.sizes() == c10::IntArrayRef(want.shape), ERROR_INVALID_TENSOR_DIM, op, which, " has shape ",
            out.sizes(), "; expected ", c10::IntArrayRef(want.shape));
  // ATB's Setup checks every tensor's dtype against the operator's table (CheckIniMatch) before its own checks.
  ATB_CHECK(out.scalar_type() == want.dtype, ERROR_INVALID_TENSOR_INI_MATCH, op, which, " has dtype ",
            out.scalar_type(), "; expected ", want.dtype);
  ATB_CHECK(out.device() == device, ERROR_INVALID_PARAM, op, which, " is on ", out.device(), " but the input is on ",
            device);
  ATB_CHECK(out.is_contiguous(), ERROR_INVALID_PARAM, op, which, " must be contiguous (strides ", out.strides(), ")");
}

bool mayOverlap(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined() || a.numel() == 0 || b.numel() == 0) return false;
  if (!a.has_storage() || !b.has_storage() || a.device() != b.device()) return false;
  // By address, not by storage: two storages can hold the same memory (torch.from_numpy twice on one array,
  // torch.frombuffer twice on one buffer, tensors over one shared-memory block).
  const auto* aBase = static_cast<const char*>(a.storage().data());
  const auto* bBase = static_cast<const char*>(b.storage().data());
  if (aBase == nullptr || bBase == nullptr) return false;  // meta tensors hold no bytes
  const auto [a0, a1] = byteSpan(a);
  const auto [b0, b1] = byteSpan(b);
  return aBase + a0 < bBase + b1 && bBase + b0 < aBase + a1;
}

at::Tensor flatElements(const at::Tensor& contiguous) {
  return contiguous.as_strided({contiguous.numel()}, {1});
}

std::vector<int64_t> hostInt64(const at::Tensor& t, const std::string& op, const char* input, int64_t length,
                               const char* lengthName) {
  ATB_CHECK(t.defined(), ERROR_INVALID_PARAM, op, " input '", input, "' is an undefined tensor");
  ATB_CHECK(t.scalar_type() == at::kLong, ERROR_INVALID_TENSOR_DTYPE, op, " input '", input, "' must be int64, got ",
            t.scalar_type());
  ATB_CHECK(t.dim() == 1 && t.size(0) == length, ERROR_INVALID_TENSOR_DIM, op, " input '", input, "' must have shape [",
            lengthName, *lengthName == '\0' ? "" : "=", length, "], got ", t.sizes());
  const at::Tensor host = t.device().is_cpu() ? t.contiguous() : t.to(at::kCPU).contiguous();
  const int64_t* p = host.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + length);
}

}  // namespace atb_ops
