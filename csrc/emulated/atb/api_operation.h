// atb::Operation over the operator object OperationTorch and torch_atb use (csrc/ops): the C++ API only converts
// arguments (descriptions and memory to at::Tensors, Context and streams to checks), so what runs, what is checked
// and what goes over the wire is the same from every surface.
//   Setup:   the context, the tensor counts, every tensor (tensor_views.h), then the operator's plan (its checks,
//            no communication) and the outputs against it; the workspace is 0 bytes (nothing needs one on CPU).
//   Execute: the same context as Setup, a live execute stream, the same dataSizes as Setup, then the operator runs
//            on the tensors' memory (synchronously: it has completed when Execute returns).
// The param (for CloneOperationParam), the operator object and what Setup saw are kept under a lock, so threads
// may share an operation as they may share an OperationTorch.
#pragma once

#include <atb/operation.h>

#include <nlohmann/json.hpp>

#include <any>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "emulated/atb/operator_io.h"
#include "ops/operation_base.h"

namespace atb_ops::atb_api {

class ApiOperation final : public atb::Operation {
 public:
  // `impl` has its param set already (from `paramObject`); `param` is the C++ struct it came from.
  ApiOperation(std::string name, nlohmann::json paramObject, std::shared_ptr<atb_ops::Operation> impl, std::any param);

  std::string GetName() const override;
  atb::Status InferShape(const atb::SVector<atb::TensorDesc>& inTensorDescs,
                         atb::SVector<atb::TensorDesc>& outTensorDescs) const override;
  uint32_t GetInputNum() const override;
  uint32_t GetOutputNum() const override;
  atb::Status Setup(const atb::VariantPack& variantPack, uint64_t& workspaceSize, atb::Context* context) override;
  atb::Status Execute(const atb::VariantPack& variantPack, uint8_t* workspace, uint64_t workspaceSize,
                      atb::Context* context) override;

  // CloneOperationParam: the C++ struct this operation was made (or last updated) from.
  std::any param() const;
  // UpdateOperationParam: a new param, already validated on `impl`. Setup must run again before Execute (as in
  // ATB). The same JSON keeps the current operator (and its communicator).
  void update(const nlohmann::json& paramObject, std::shared_ptr<atb_ops::Operation> impl, std::any param);
  void setStreamId(uint32_t id);
  uint32_t streamId() const;

 private:
  // What a successful Setup saw; Execute must match it.
  struct SetupRecord {
    const atb::Context* context = nullptr;
    std::vector<uint64_t> inSizes;
    std::vector<uint64_t> outSizes;
  };
  struct Views {
    std::vector<at::Tensor> inputs;
    std::vector<at::Tensor> outputs;
  };

  Views viewsOf(const atb::VariantPack& pack) const;
  // The tensors against the operator's plan: what Setup and a PRELAUNCH Execute check, nothing moved.
  void checkAgainstPlan(const atb_ops::Operation& op, const Views& v) const;
  std::shared_ptr<atb_ops::Operation> impl() const;
  // "AllGatherOperation::Setup (rank 1 of 2)": how messages name a call.
  std::string callName(const char* method) const;

  const std::string name_;
  const OperatorIo& io_;
  mutable std::mutex mutex_;
  nlohmann::json paramObject_;
  std::string rankLabel_;  // " (rank r of n)" for the communication operators, from the param
  std::shared_ptr<atb_ops::Operation> impl_;
  std::any param_;
  std::optional<SetupRecord> setup_;
  uint32_t streamId_ = 0;
};

}  // namespace atb_ops::atb_api
