#include "emulated/atb/dtypes.h"

#include "core/acl_codes.h"

namespace atb_ops::atb_api {

// The numbers core/acl_codes.h writes for the code that sees no vendor header, against ACL's own.
static_assert(acl::kDtUndefined == ACL_DT_UNDEFINED && acl::kFloat == ACL_FLOAT && acl::kFloat16 == ACL_FLOAT16 &&
                  acl::kInt8 == ACL_INT8 && acl::kInt32 == ACL_INT32 && acl::kUint8 == ACL_UINT8 &&
                  acl::kInt16 == ACL_INT16 && acl::kInt64 == ACL_INT64 && acl::kDouble == ACL_DOUBLE &&
                  acl::kBool == ACL_BOOL && acl::kBf16 == ACL_BF16,
              "aclDataType codes moved: update core/acl_codes.h");
static_assert(acl::kFormatNd == ACL_FORMAT_ND, "ACL_FORMAT_ND moved: update core/acl_codes.h");

std::optional<c10::ScalarType> scalarTypeOf(aclDataType dtype) {
  return acl::scalarTypeOf(static_cast<int32_t>(dtype));
}

aclDataType aclDataTypeOf(c10::ScalarType dtype) {
  return static_cast<aclDataType>(acl::dataTypeOf(dtype));
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
