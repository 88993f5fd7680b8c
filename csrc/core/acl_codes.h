// ACL's numbers for data types (aclDataType) and the ND format (aclFormat), as ATB's params (outDataType) and
// infer_shape carry them: written once here for the code that includes no vendor header (csrc/ops, op_plugin).
// csrc/emulated/atb/dtypes.cpp checks every one against include/acl/acl_base.h.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>

namespace atb_ops::acl {

constexpr int32_t kDtUndefined = -1;  // ACL_DT_UNDEFINED
constexpr int32_t kFloat = 0;         // ACL_FLOAT: float32
constexpr int32_t kFloat16 = 1;       // ACL_FLOAT16
constexpr int32_t kInt8 = 2;          // ACL_INT8
constexpr int32_t kInt32 = 3;         // ACL_INT32
constexpr int32_t kUint8 = 4;         // ACL_UINT8
constexpr int32_t kInt16 = 6;         // ACL_INT16
constexpr int32_t kInt64 = 9;         // ACL_INT64
constexpr int32_t kDouble = 11;       // ACL_DOUBLE: float64
constexpr int32_t kBool = 12;         // ACL_BOOL
constexpr int32_t kBf16 = 27;         // ACL_BF16: bfloat16

constexpr int32_t kFormatNd = 2;  // ACL_FORMAT_ND

// The aclDataType of a torch dtype atb_ops moves; kDtUndefined for any other.
inline int32_t dataTypeOf(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return kFloat;
    case c10::ScalarType::Half: return kFloat16;
    case c10::ScalarType::Char: return kInt8;
    case c10::ScalarType::Int: return kInt32;
    case c10::ScalarType::Byte: return kUint8;
    case c10::ScalarType::Short: return kInt16;
    case c10::ScalarType::Long: return kInt64;
    case c10::ScalarType::Double: return kDouble;
    case c10::ScalarType::Bool: return kBool;
    case c10::ScalarType::BFloat16: return kBf16;
    default: return kDtUndefined;
  }
}

// The torch dtype that holds an aclDataType's elements; nullopt for a code outside the list above.
inline std::optional<c10::ScalarType> scalarTypeOf(int32_t code) {
  switch (code) {
    case kFloat: return c10::ScalarType::Float;
    case kFloat16: return c10::ScalarType::Half;
    case kInt8: return c10::ScalarType::Char;
    case kInt32: return c10::ScalarType::Int;
    case kUint8: return c10::ScalarType::Byte;
    case kInt16: return c10::ScalarType::Short;
    case kInt64: return c10::ScalarType::Long;
    case kDouble: return c10::ScalarType::Double;
    case kBool: return c10::ScalarType::Bool;
    case kBf16: return c10::ScalarType::BFloat16;
    default: return std::nullopt;
  }
}

}  // namespace atb_ops::acl
