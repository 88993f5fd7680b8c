// The parts of nccl_api.h that need no NCCL: names, id text, and the error raiser behind ATB_NCCL_CHECK.
#include "comm/nccl/nccl_api.h"

#include <cstring>

#include "core/status.h"

namespace atb_ops::nccl {

const char* dataTypeName(NcclDataType t) {
  switch (t) {
    case NcclDataType::Int8: return "ncclInt8";
    case NcclDataType::Uint8: return "ncclUint8";
    case NcclDataType::Int32: return "ncclInt32";
    case NcclDataType::Uint32: return "ncclUint32";
    case NcclDataType::Int64: return "ncclInt64";
    case NcclDataType::Uint64: return "ncclUint64";
    case NcclDataType::Float16: return "ncclFloat16";
    case NcclDataType::Float32: return "ncclFloat32";
    case NcclDataType::Float64: return "ncclFloat64";
    case NcclDataType::Bfloat16: return "ncclBfloat16";
  }
  return "ncclUnknownType";
}

std::string toHex(const UniqueId& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * kUniqueIdBytes);
  for (char c : id.bytes) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

bool fromHex(const std::string& hex, UniqueId& id) {
  if (hex.size() != 2 * kUniqueIdBytes) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < kUniqueIdBytes; ++i) {
    const int hi = nibble(hex[2 * i]);
    const int lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    id.bytes[i] = static_cast<char>((hi << 4) | lo);
  }
  return true;
}

void raiseNcclError(NcclApi& api, CommHandle comm, NcclResult result, const char* call, const std::string& context,
                    const char* file, int line) {
  // Repository-relative, so messages do not depend on where the build ran.
  const char* rel = std::strstr(file, "csrc/");
  const char* text = api.getErrorString(result);
  const char* last = api.getLastError(comm);
  ATB_FAIL(ERROR_NCCL_FAIL, context, ": ", call, " failed with ncclResult ", static_cast<int>(result), " (",
           text == nullptr ? "?" : text, "); NCCL last error: '", last == nullptr ? "" : last, "' [",
           rel == nullptr ? file : rel, ":", line, "]");
}

}  // namespace atb_ops::nccl
