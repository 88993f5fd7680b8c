// atb::Utils: tensor sizes as ATB computes them (0 for what ATB cannot size, with the reason logged), the library's
// version, and its log level (log.h).
#include <atb/utils.h>

#include <cstring>
#include <limits>

#include "emulated/atb/dtypes.h"
#include "emulated/atb/log.h"

#ifndef ATB_OPS_VERSION
#define ATB_OPS_VERSION "unknown"
#endif

namespace atb {

std::string Utils::GetAtbVersion() {
  return std::string("atb_ops ") + ATB_OPS_VERSION + " (ATB's C++ API on CPU ranks)";
}

uint64_t Utils::GetTensorSize(const Tensor& tensor) {
  return GetTensorSize(tensor.desc);
}

uint64_t Utils::GetTensorSize(const TensorDesc& tensorDesc) {
  const uint64_t itemBytes = atb_ops::atb_api::elementBytes(tensorDesc.dtype);
  if (itemBytes == 0) {
    atb_ops::atb_api::logLine(LogLevel::ERROR, "Utils::GetTensorSize: dtype " +
                                                   atb_ops::atb_api::dtypeName(tensorDesc.dtype) +
                                                   " has no element size; the size is 0");
    return 0;
  }
  const uint64_t numel = GetTensorNumel(tensorDesc);
  if (numel > std::numeric_limits<uint64_t>::max() / itemBytes) {
    atb_ops::atb_api::logLine(LogLevel::ERROR, "Utils::GetTensorSize: the size overflows uint64; the size is 0");
    return 0;
  }
  return numel * itemBytes;
}

uint64_t Utils::GetTensorNumel(const Tensor& tensor) {
  return GetTensorNumel(tensor.desc);
}

// The product of the dims; 0 for no dims, a dim <= 0 (ATB counts no empty tensors) or an overflow.
uint64_t Utils::GetTensorNumel(const TensorDesc& tensorDesc) {
  const uint64_t dimNum = tensorDesc.shape.dimNum;
  if (dimNum == 0 || dimNum > MAX_DIM) return 0;
  uint64_t numel = 1;
  for (uint64_t i = 0; i < dimNum; ++i) {
    const int64_t d = tensorDesc.shape.dims[i];
    if (d <= 0 || numel > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) return 0;
    numel *= static_cast<uint64_t>(d);
  }
  return numel;
}

// Each float's bits, widened to uint64 (how ATB passes quantisation scales to its kernels).
void Utils::QuantParamConvert(const float* src, uint64_t* dest, uint64_t itemCount) {
  if (src == nullptr || dest == nullptr) return;
  for (uint64_t i = 0; i < itemCount; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &src[i], sizeof(bits));
    dest[i] = bits;
  }
}

Status Utils::SetLogLevel(const LogLevel atbLogLevel) {
  return atb_ops::atb_api::setLogLevel(atbLogLevel);
}

Status Utils::ResetLogLevel() {
  return atb_ops::atb_api::resetLogLevel();
}

}  // namespace atb
