// atb::Utils: tensor sizes and the library's version and log level. Written for atb_ops from ATB's published
// interface.
#ifndef ATB_OPS_INCLUDE_ATB_UTILS_H
#define ATB_OPS_INCLUDE_ATB_UTILS_H

#include <cstdint>
#include <string>

#include "types.h"

namespace atb {

class Utils {
 public:
  static std::string GetAtbVersion();
  // Bytes of the tensor's elements (dims times the size of its dtype).
  static uint64_t GetTensorSize(const Tensor& tensor);
  static uint64_t GetTensorSize(const TensorDesc& tensorDesc);
  static uint64_t GetTensorNumel(const Tensor& tensor);
  static uint64_t GetTensorNumel(const TensorDesc& tensorDesc);
  static void QuantParamConvert(const float* src, uint64_t* dest, uint64_t itemCount);
  static Status SetLogLevel(const atb::LogLevel atbLogLevel);
  static Status ResetLogLevel();
};

}  // namespace atb

#endif  // ATB_OPS_INCLUDE_ATB_UTILS_H
