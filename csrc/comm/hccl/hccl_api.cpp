#include "comm/hccl/hccl_api.h"

namespace atb_ops::hccl {

int64_t dataTypeSize(int32_t code) {
  switch (code) {
    case dtype::kInt8:
    case dtype::kUint8: return 1;
    case dtype::kInt16:
    case dtype::kUint16:
    case dtype::kFp16:
    case dtype::kBfp16: return 2;
    case dtype::kInt32:
    case dtype::kUint32:
    case dtype::kFp32: return 4;
    case dtype::kInt64:
    case dtype::kUint64:
    case dtype::kFp64: return 8;
    default: return 0;
  }
}

std::string resultName(int32_t code) {
  // Names of hccl_types.h's HcclResult, in order from HCCL_SUCCESS = 0.
  static constexpr const char* kNames[] = {"HCCL_SUCCESS",
                                           "HCCL_E_PARA",
                                           "HCCL_E_PTR",
                                           "HCCL_E_MEMORY",
                                           "HCCL_E_INTERNAL",
                                           "HCCL_E_NOT_SUPPORT",
                                           "HCCL_E_NOT_FOUND",
                                           "HCCL_E_UNAVAIL",
                                           "HCCL_E_SYSCALL",
                                           "HCCL_E_TIMEOUT",
                                           "HCCL_E_OPEN_FILE_FAILURE",
                                           "HCCL_E_TCP_CONNECT",
                                           "HCCL_E_ROCE_CONNECT",
                                           "HCCL_E_TCP_TRANSFER",
                                           "HCCL_E_ROCE_TRANSFER",
                                           "HCCL_E_RUNTIME",
                                           "HCCL_E_DRV",
                                           "HCCL_E_PROFILING",
                                           "HCCL_E_CCE",
                                           "HCCL_E_NETWORK",
                                           "HCCL_E_AGAIN",
                                           "HCCL_E_REMOTE",
                                           "HCCL_E_SUSPENDING",
                                           "HCCL_E_OPRETRY_FAIL",
                                           "HCCL_E_OOM"};
  if (code >= 0 && code < static_cast<int32_t>(sizeof(kNames) / sizeof(kNames[0]))) return kNames[code];
  return "HCCL_RESULT_" + std::to_string(code);
}

}  // namespace atb_ops::hccl
