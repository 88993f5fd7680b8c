// Registers backend "hccl": HcclCommunicator (the mock-tested logic) over the real HcclApi. Built only with
// the Ascend toolkit and torch_npu; without it "hccl" is absent and NPU-less machines fall back (see docs/contract.md,
// "Backends").
#include "comm/backend_registry.h"
#include "comm/hccl/hccl_communicator.h"
#include "comm/hccl/npu/real_hccl_api.h"

namespace atb_ops::hccl {
namespace {

const bool registered = [] {
  registerBackend("hccl", c10::DeviceType::PrivateUse1, [](const CommConfig& c) -> std::shared_ptr<Communicator> {
    return makeHcclCommunicator(c, realHcclApi());
  });
  return true;
}();

}  // namespace
}  // namespace atb_ops::hccl
