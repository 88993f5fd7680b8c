#include "emulated/hccl/c_api_support.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <cstdio>

namespace atb_ops::hccl_cpu {

namespace {

thread_local std::string lastError;
thread_local int32_t lastStatus = 0;  // atb_ops::Status of this thread's last failure

}  // namespace

HcclResult fail(HcclResult code, const std::string& why, atb_ops::Status status) {
  lastError = why;
  lastStatus = static_cast<int32_t>(status);
  return code;
}

void clearLastError() {
  lastError.clear();
}

const std::string& lastErrorText() {
  return lastError;
}

int32_t lastStatusCode() {
  return lastStatus;
}

HcclResult toHcclResult(atb_ops::Status s) {
  switch (s) {
    case atb_ops::Status::ERROR_COMM_TIMEOUT: return HCCL_E_TIMEOUT;
    case atb_ops::Status::ERROR_COMM_PEER_DIED:
    case atb_ops::Status::ERROR_COMM_PEER_LEFT: return HCCL_E_REMOTE;
    case atb_ops::Status::ERROR_RT_FAIL:
    case atb_ops::Status::ERROR_INTERNAL_ERROR:
    case atb_ops::Status::ERROR_COMM_EMPTY: return HCCL_E_INTERNAL;
    default: return HCCL_E_PARA;
  }
}

std::string handleText(HcclComm comm) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", comm);
  return text;
}

// The torch dtype data of `type` is stored as; reductions need arithmetic, so unsigned 16/32/64-bit data
// (which torch cannot reduce) is refused there.
bool scalarTypeOf(HcclDataType type, c10::ScalarType* out) {
  switch (type) {
    case HCCL_DATA_TYPE_INT8: *out = at::kChar; return true;
    case HCCL_DATA_TYPE_INT16: *out = at::kShort; return true;
    case HCCL_DATA_TYPE_INT32: *out = at::kInt; return true;
    case HCCL_DATA_TYPE_INT64: *out = at::kLong; return true;
    case HCCL_DATA_TYPE_UINT8: *out = at::kByte; return true;
    case HCCL_DATA_TYPE_FP16: *out = at::kHalf; return true;
    case HCCL_DATA_TYPE_FP32: *out = at::kFloat; return true;
    case HCCL_DATA_TYPE_FP64: *out = at::kDouble; return true;
    case HCCL_DATA_TYPE_BFP16: *out = at::kBFloat16; return true;
    default: return false;
  }
}

int64_t sizeOf(HcclDataType type) {
  switch (type) {
    case HCCL_DATA_TYPE_INT8:
    case HCCL_DATA_TYPE_UINT8: return 1;
    case HCCL_DATA_TYPE_INT16:
    case HCCL_DATA_TYPE_UINT16:
    case HCCL_DATA_TYPE_FP16:
    case HCCL_DATA_TYPE_BFP16: return 2;
    case HCCL_DATA_TYPE_INT32:
    case HCCL_DATA_TYPE_UINT32:
    case HCCL_DATA_TYPE_FP32: return 4;
    case HCCL_DATA_TYPE_INT64:
    case HCCL_DATA_TYPE_UINT64:
    case HCCL_DATA_TYPE_FP64: return 8;
    default: return 0;
  }
}

int64_t unitOf(HcclDataType type) {
  c10::ScalarType t;
  return scalarTypeOf(type, &t) ? 1 : sizeOf(type);
}

namespace {
void checkNotNull(const void* ptr, uint64_t count, const char* what) {
  if (ptr == nullptr && count > 0) {
    throw NullBuffer(std::string(what) + " is null, with " + std::to_string(count) + " elements due there");
  }
}
}  // namespace

// `count` elements of `type` at `ptr` as a tensor (no copy): typed when the collective computes, as bytes
// when it only moves data (every HCCL type then works).
at::Tensor typed(const void* ptr, uint64_t count, HcclDataType type, const char* what) {
  c10::ScalarType t;
  if (!scalarTypeOf(type, &t)) {
    throw NotSupported("HcclDataType " + std::to_string(static_cast<int>(type)) +
                       " cannot be reduced here (unsigned 16/32/64-bit data only moves)");
  }
  checkNotNull(ptr, count, what);
  if (count == 0) return at::empty({0}, at::TensorOptions().dtype(t));
  return at::from_blob(const_cast<void*>(ptr), {static_cast<int64_t>(count)}, at::TensorOptions().dtype(t));
}

at::Tensor bytes(const void* ptr, uint64_t count, HcclDataType type, const char* what) {
  checkNotNull(ptr, count, what);
  const int64_t n = static_cast<int64_t>(count) * sizeOf(type);
  if (n == 0) return at::empty({0}, at::TensorOptions().dtype(at::kByte));
  return at::from_blob(const_cast<void*>(ptr), {n}, at::TensorOptions().dtype(at::kByte));
}

// Data a call moves: typed where torch has the type, so a size that differs across ranks is named in the caller's
// elements; as bytes otherwise.
at::Tensor payload(const void* ptr, uint64_t count, HcclDataType type, const char* what) {
  c10::ScalarType t;
  return scalarTypeOf(type, &t) ? typed(ptr, count, type, what) : bytes(ptr, count, type, what);
}

atb_ops::ReduceOp reduceOpOf(HcclReduceOp op) {
  switch (op) {
    case HCCL_REDUCE_SUM: return atb_ops::ReduceOp::kSum;
    case HCCL_REDUCE_PROD: return atb_ops::ReduceOp::kProd;
    case HCCL_REDUCE_MAX: return atb_ops::ReduceOp::kMax;
    case HCCL_REDUCE_MIN: return atb_ops::ReduceOp::kMin;
    default: ATB_FAIL(ERROR_INVALID_PARAM, "HcclReduceOp ", static_cast<int>(op), " is not sum, prod, max or min");
  }
}

std::vector<int64_t> countsOf(const void* values, uint32_t n) {
  const auto* v = static_cast<const uint64_t*>(values);
  std::vector<int64_t> out;
  for (uint32_t i = 0; i < n; ++i) {
    ATB_CHECK(v[i] <= static_cast<uint64_t>(INT64_MAX), ERROR_INVALID_PARAM, "count or displacement ", i, " is ", v[i]);
    out.push_back(static_cast<int64_t>(v[i]));
  }
  return out;
}

// HCCL never touches a region of count 0, wherever its displacement points; the buffers' sizes are not
// known here (only pointers), so such a displacement is set to 0 before the layout check.
void clearEmptyDispls(const std::vector<int64_t>& counts, std::vector<int64_t>& displs) {
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) displs[i] = 0;
  }
}

int64_t extent(const std::vector<int64_t>& counts, const std::vector<int64_t>& displs) {
  int64_t end = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) end = std::max(end, displs[i] + counts[i]);
  }
  return end;
}

}  // namespace atb_ops::hccl_cpu
