// ACL's data types and formats as libatb.so meets them in atb::TensorDesc: which torch dtype holds each one's
// elements, how many bytes an element takes (atb::Utils::GetTensorSize), and which formats are plain row-major
// layouts (the only ones CPU memory can hold as ATB means them).
#pragma once

#include <acl/acl_base.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string>

namespace atb_ops::atb_api {

// The dtypes of core/acl_codes.h (ACL_FLOAT float32, ACL_FLOAT16, ..., ACL_BF16 bfloat16); nullopt for the others.
std::optional<c10::ScalarType> scalarTypeOf(aclDataType dtype);
// The inverse, for InferShape; ACL_DT_UNDEFINED for a dtype outside the list above.
aclDataType aclDataTypeOf(c10::ScalarType dtype);

// Bytes of one element as ATB counts them; 0 for a dtype ATB has no size for.
uint64_t elementBytes(aclDataType dtype);

// "ACL_FLOAT16 (1)"
std::string dtypeName(aclDataType dtype);
std::string formatName(aclFormat format);

// ND, NCHW, NHWC, NDHWC, NCDHW, HWCN, NC, NCL and ACL_FORMAT_UNDEFINED: names for one row-major layout. The
// blocked formats (NC1HWC0, FRACTAL_Z, FRACTAL_NZ, ...) are not emulated.
bool isPlainFormat(aclFormat format);

}  // namespace atb_ops::atb_api
