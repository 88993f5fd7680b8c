#include "emulated/atb/dtypes.h"

namespace atb_ops::atb_api {

std::optional<c10::ScalarType> scalarTypeOf(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT: return c10::ScalarType::Float;
    case ACL_FLOAT16: return c10::ScalarType::Half;
    case ACL_INT8: return c10::ScalarType::Char;
    case ACL_INT32: return c10::ScalarType::Int;
    case ACL_UINT8: return c10::ScalarType::Byte;
    case ACL_INT16: return c10::ScalarType::Short;
    case ACL_INT64: return c10::ScalarType::Long;
    case ACL_DOUBLE: return c10::ScalarType::Double;
    case ACL_BOOL: return c10::ScalarType::Bool;
    case ACL_BF16: return c10::ScalarType::BFloat16;
    default: return std::nullopt;
  }
}

aclDataType aclDataTypeOf(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return ACL_FLOAT;
    case c10::ScalarType::Half: return ACL_FLOAT16;
    case c10::ScalarType::Char: return ACL_INT8;
    case c10::ScalarType::Int: return ACL_INT32;
    case c10::ScalarType::Byte: return ACL_UINT8;
    case c10::ScalarType::Short: return ACL_INT16;
    case c10::ScalarType::Long: return ACL_INT64;
    case c10::ScalarType::Double: return ACL_DOUBLE;
    case c10::ScalarType::Bool: return ACL_BOOL;
    case c10::ScalarType::BFloat16: return ACL_BF16;
    default: return ACL_DT_UNDEFINED;
  }
}

uint64_t elementBytes(aclDataType dtype) {
  // ACL's sizes (libascendcl.so), but for ATB's own: an undefined dtype is one byte, a string the host's
  // std::string, and ACL_COMPLEX32 has no size in ATB.
  switch (dtype) {
    case ACL_DT_UNDEFINED: return 1;
    case ACL_STRING: return sizeof(std::string);
    case ACL_COMPLEX32: return 0;
    default: return aclDataTypeSize(dtype);
  }
}

std::string dtypeName(aclDataType dtype) {
  const char* name = "unknown aclDataType";
  switch (dtype) {
    case ACL_DT_UNDEFINED: name = "ACL_DT_UNDEFINED"; break;
    case ACL_FLOAT: name = "ACL_FLOAT"; break;
    case ACL_FLOAT16: name = "ACL_FLOAT16"; break;
    case ACL_INT8: name = "ACL_INT8"; break;
    case ACL_INT32: name = "ACL_INT32"; break;
    case ACL_UINT8: name = "ACL_UINT8"; break;
    case ACL_INT16: name = "ACL_INT16"; break;
    case ACL_UINT16: name = "ACL_UINT16"; break;
    case ACL_UINT32: name = "ACL_UINT32"; break;
    case ACL_INT64: name = "ACL_INT64"; break;
    case ACL_UINT64: name = "ACL_UINT64"; break;
    case ACL_DOUBLE: name = "ACL_DOUBLE"; break;
    case ACL_BOOL: name = "ACL_BOOL"; break;
    case ACL_STRING: name = "ACL_STRING"; break;
    case ACL_COMPLEX64: name = "ACL_COMPLEX64"; break;
    case ACL_COMPLEX128: name = "ACL_COMPLEX128"; break;
    case ACL_BF16: name = "ACL_BF16"; break;
    case ACL_INT4: name = "ACL_INT4"; break;
    case ACL_UINT1: name = "ACL_UINT1"; break;
    case ACL_COMPLEX32: name = "ACL_COMPLEX32"; break;
    case ACL_HIFLOAT8: name = "ACL_HIFLOAT8"; break;
    case ACL_FLOAT8_E5M2: name = "ACL_FLOAT8_E5M2"; break;
    case ACL_FLOAT8_E4M3FN: name = "ACL_FLOAT8_E4M3FN"; break;
    case ACL_FLOAT8_E8M0: name = "ACL_FLOAT8_E8M0"; break;
    case ACL_FLOAT6_E3M2: name = "ACL_FLOAT6_E3M2"; break;
    case ACL_FLOAT6_E2M3: name = "ACL_FLOAT6_E2M3"; break;
    case ACL_FLOAT4_E2M1: name = "ACL_FLOAT4_E2M1"; break;
    case ACL_FLOAT4_E1M2: name = "ACL_FLOAT4_E1M2"; break;
  }
  return std::string(name) + " (" + std::to_string(static_cast<int>(dtype)) + ")";
}

std::string formatName(aclFormat format) {
  const char* name = "a blocked format";
  switch (format) {
    case ACL_FORMAT_UNDEFINED: name = "ACL_FORMAT_UNDEFINED"; break;
    case ACL_FORMAT_NCHW: name = "ACL_FORMAT_NCHW"; break;
    case ACL_FORMAT_NHWC: name = "ACL_FORMAT_NHWC"; break;
    case ACL_FORMAT_ND: name = "ACL_FORMAT_ND"; break;
    case ACL_FORMAT_NC1HWC0: name = "ACL_FORMAT_NC1HWC0"; break;
    case ACL_FORMAT_FRACTAL_Z: name = "ACL_FORMAT_FRACTAL_Z"; break;
    case ACL_FORMAT_FRACTAL_NZ: name = "ACL_FORMAT_FRACTAL_NZ"; break;
    case ACL_FORMAT_NCDHW: name = "ACL_FORMAT_NCDHW"; break;
    case ACL_FORMAT_NDHWC: name = "ACL_FORMAT_NDHWC"; break;
    case ACL_FORMAT_HWCN: name = "ACL_FORMAT_HWCN"; break;
    case ACL_FORMAT_NC: name = "ACL_FORMAT_NC"; break;
    case ACL_FORMAT_NCL: name = "ACL_FORMAT_NCL"; break;
    default: break;
  }
  return std::string(name) + " (" + std::to_string(static_cast<int>(format)) + ")";
}

bool isPlainFormat(aclFormat format) {
  switch (format) {
    case ACL_FORMAT_UNDEFINED:
    case ACL_FORMAT_NCHW:
    case ACL_FORMAT_NHWC:
    case ACL_FORMAT_ND:
    case ACL_FORMAT_HWCN:
    case ACL_FORMAT_NDHWC:
    case ACL_FORMAT_NCDHW:
    case ACL_FORMAT_NC:
    case ACL_FORMAT_NCL: return true;
    default: return false;
  }
}

}  // namespace atb_ops::atb_api
