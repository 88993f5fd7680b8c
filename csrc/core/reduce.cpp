#include "core/reduce.h"

#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/mul.h>

#include "core/reduce_kernels.h"
#include "core/status.h"

namespace atb_ops {

ReduceOp parseReduceOp(const std::string& name, const std::string& what) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "prod") return ReduceOp::kProd;
  if (name == "max") return ReduceOp::kMax;
  if (name == "min") return ReduceOp::kMin;
  ATB_FAIL(ERROR_INVALID_PARAM, what, " is '", name, "'; expected one of sum, prod, max, min");
}

const char* reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
  }
  return "unknown";
}

c10::ScalarType accumulationType(c10::ScalarType t) {
  return (t == at::kHalf || t == at::kBFloat16) ? at::kFloat : t;
}

void accumulate(at::Tensor& acc, const at::Tensor& x, ReduceOp op) {
  const at::Tensor rhs =
      x.scalar_type() == acc.scalar_type() ? x.view(acc.sizes()) : x.view(acc.sizes()).to(acc.scalar_type());
  switch (op) {
    case ReduceOp::kSum: at::add_out(acc, acc, rhs); break;
    case ReduceOp::kProd: at::mul_out(acc, acc, rhs); break;
    case ReduceOp::kMax: at::maximum_out(acc, acc, rhs); break;
    case ReduceOp::kMin: at::minimum_out(acc, acc, rhs); break;
  }
}

void reduceInOrder(const std::vector<at::Tensor>& parts, at::Tensor& out, ReduceOp op) {
  ATB_CHECK(!parts.empty(), ERROR_INTERNAL_ERROR, "reduceInOrder needs at least one part");
  if (out.is_cpu() && out.is_contiguous()) {
    std::vector<const char*> raw;
    for (const at::Tensor& p : parts) {
      if (!p.is_cpu() || !p.is_contiguous() || p.scalar_type() != out.scalar_type() || p.numel() != out.numel()) break;
      raw.push_back(static_cast<const char*>(p.data_ptr()));
    }
    if (raw.size() == parts.size() &&
        reduceRaw(raw.data(), raw.size(), static_cast<char*>(out.data_ptr()), out.numel(), out.scalar_type(), op)) {
      return;
    }
  }
  const c10::ScalarType acc = accumulationType(out.scalar_type());
  at::Tensor flat = out.view({-1});
  if (acc == out.scalar_type()) {
    if (parts[0].data_ptr() != flat.data_ptr()) flat.copy_(parts[0].view({-1}));
    for (size_t i = 1; i < parts.size(); ++i) accumulate(flat, parts[i].view({-1}), op);
    return;
  }
  at::Tensor sum = parts[0].view({-1}).to(acc);
  for (size_t i = 1; i < parts.size(); ++i) accumulate(sum, parts[i].view({-1}), op);
  flat.copy_(sum);
}

void reduceInOrder(const char* const* parts, size_t count, char* out, int64_t n, c10::ScalarType dtype, ReduceOp op) {
  if (reduceRaw(parts, count, out, n, dtype, op)) return;
  const auto over = [&](const char* p) {
    return at::from_blob(const_cast<char*>(p), {n}, at::TensorOptions().dtype(dtype));
  };
  std::vector<at::Tensor> tensors;
  for (size_t i = 0; i < count; ++i) tensors.push_back(over(parts[i]));
  // The tensor path writes its output before reading every part: reduce apart, then copy, so `out` may
  // still alias a part.
  at::Tensor result = at::empty({n}, at::TensorOptions().dtype(dtype));
  reduceInOrder(tensors, result, op);
  over(out).copy_(result);
}

}  // namespace atb_ops
